//! The MILP as text for external solvers: CPLEX LP format ([`write_lp`]) and free MPS
//! ([`write_mps`]).
//!
//! Both keep the MILP's own variable and constraint names (made of `[A-Za-z0-9_]`), print every
//! number as the shortest decimal that reads back to the same `f64`, and never print `inf` or
//! `NaN`: infinite bounds are written as the formats' own keywords, and a MILP with a non-finite
//! coefficient or right-hand side is refused with [`std::io::ErrorKind::InvalidInput`].
//!
//! The objective constant, which LP readers disagree about, is written in LP files as the
//! coefficient of an extra variable `obj_constant` fixed at 1; in MPS files it is the right-hand
//! side of the objective row with its sign negated, the standard convention
//! (objective = `Σ c x − rhs`).

use std::io::{self, Write};

use absinthe_model::encodings::lp::{Milp, Sense, VarId};

/// LP lines are kept below this length (CPLEX's limit is 255).
const MAX_LINE: usize = 200;

/// The name of the extra LP variable fixed at 1 that carries the objective constant:
/// `obj_constant`, made unique against the MILP's own names.
fn constant_column_name(milp: &Milp) -> String {
    let mut name = "obj_constant".to_string();
    while milp.vars.iter().any(|v| v.name == name) {
        name.push('_');
    }
    name
}

/// Writes `milp` in CPLEX LP format.
pub fn write_lp(milp: &Milp, out: &mut impl Write) -> io::Result<()> {
    check(milp, true)?;
    let constant = milp.objective.constant;
    let constant_name = constant_column_name(milp);
    // A placeholder variable for empty expressions when the MILP has none of its own.
    let placeholder: &str = milp
        .vars
        .first()
        .map(|v| v.name.as_str())
        .unwrap_or(&constant_name);
    let write_constant = constant != 0.0 || milp.vars.is_empty();

    writeln!(out, "\\ Problem name: {}", milp.name)?;
    writeln!(out, "Minimize")?;
    let mut objective = expression_terms(milp, &milp.objective.terms);
    if constant != 0.0 {
        objective.push(term(constant, &constant_name));
    }
    write_row(out, "obj", objective, placeholder, "")?;

    writeln!(out, "Subject To")?;
    for constraint in &milp.constraints {
        let relation = format!("{} {}", sense_lp(constraint.sense), number(constraint.rhs));
        let terms = expression_terms(milp, &constraint.terms);
        write_row(out, &constraint.name, terms, placeholder, &relation)?;
    }

    writeln!(out, "Bounds")?;
    for var in &milp.vars {
        if is_exact_binary(var) {
            continue; // `Binary` implies [0, 1].
        }
        let (lower, upper, name) = (var.lower, var.upper, &var.name);
        match (lower == f64::NEG_INFINITY, upper == f64::INFINITY) {
            (true, true) => writeln!(out, " {name} free")?,
            _ if lower == upper => writeln!(out, " {name} = {}", number(lower))?,
            (true, false) => writeln!(out, " -infinity <= {name} <= {}", number(upper))?,
            (false, true) if lower == 0.0 => {} // the default
            (false, true) => writeln!(out, " {name} >= {}", number(lower))?,
            (false, false) => writeln!(out, " {} <= {name} <= {}", number(lower), number(upper))?,
        }
    }
    if write_constant {
        writeln!(out, " {constant_name} = 1")?;
    }

    let general: Vec<&str> = milp
        .vars
        .iter()
        .filter(|v| v.integer && !is_exact_binary(v))
        .map(|v| v.name.as_str())
        .collect();
    let binary: Vec<&str> = milp
        .vars
        .iter()
        .filter(|v| is_exact_binary(v))
        .map(|v| v.name.as_str())
        .collect();
    for (section, names) in [("General", general), ("Binary", binary)] {
        if !names.is_empty() {
            writeln!(out, "{section}")?;
            write_wrapped(out, names.into_iter().map(String::from))?;
        }
    }
    writeln!(out, "End")?;
    Ok(())
}

/// Writes `milp` in free MPS format (names may be longer than 8 characters, fields are
/// separated by spaces).
pub fn write_mps(milp: &Milp, out: &mut impl Write) -> io::Result<()> {
    check(milp, false)?;
    let objective_row = objective_row_name(milp);
    writeln!(out, "NAME          {}", milp.name)?;
    mps_rows(milp, &objective_row, out)?;
    mps_columns(milp, &objective_row, out)?;
    mps_rhs(milp, &objective_row, out)?;
    mps_bounds(milp, out)?;
    writeln!(out, "ENDATA")?;
    Ok(())
}

/// The MPS `ROWS` section: the objective row, then one row per constraint.
fn mps_rows(milp: &Milp, objective_row: &str, out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "ROWS")?;
    writeln!(out, " N  {objective_row}")?;
    for constraint in &milp.constraints {
        let kind = match constraint.sense {
            Sense::Le => "L",
            Sense::Ge => "G",
            Sense::Eq => "E",
        };
        writeln!(out, " {kind}  {}", constraint.name)?;
    }
    Ok(())
}

/// The MPS `COLUMNS` section: column-wise entries, objective first, in constraint order, with
/// integer columns between `INTORG` and `INTEND` markers.
fn mps_columns(milp: &Milp, objective_row: &str, out: &mut impl Write) -> io::Result<()> {
    let mut columns: Vec<Vec<(&str, f64)>> = vec![Vec::new(); milp.vars.len()];
    for &(var, coef) in &milp.objective.normalized().terms {
        columns[var.0].push((objective_row, coef));
    }
    for constraint in &milp.constraints {
        for &(var, coef) in &constraint.terms {
            columns[var.0].push((constraint.name.as_str(), coef));
        }
    }
    writeln!(out, "COLUMNS")?;
    let mut in_integer_block = false;
    let mut markers = 0;
    for (var, entries) in milp.vars.iter().zip(&columns) {
        if var.integer != in_integer_block {
            let which = if var.integer { "INTORG" } else { "INTEND" };
            writeln!(
                out,
                "    MARKER{markers:<6}  'MARKER'                 '{which}'"
            )?;
            markers += 1;
            in_integer_block = var.integer;
        }
        if entries.is_empty() {
            // A column must appear to exist.
            writeln!(
                out,
                "    {:<8}  {:<8}  {}",
                var.name,
                objective_row,
                number(0.0)
            )?;
        }
        for (row, coef) in entries {
            writeln!(out, "    {:<8}  {:<8}  {}", var.name, row, number(*coef))?;
        }
    }
    if in_integer_block {
        writeln!(
            out,
            "    MARKER{markers:<6}  'MARKER'                 'INTEND'"
        )?;
    }
    Ok(())
}

/// The MPS `RHS` section: the objective constant, negated, on the objective row, and every
/// non-zero right-hand side.
fn mps_rhs(milp: &Milp, objective_row: &str, out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "RHS")?;
    let constant = milp.objective.constant;
    if constant != 0.0 {
        writeln!(
            out,
            "    RHS       {:<8}  {}",
            objective_row,
            number(-constant)
        )?;
    }
    for constraint in milp.constraints.iter().filter(|c| c.rhs != 0.0) {
        writeln!(
            out,
            "    RHS       {:<8}  {}",
            constraint.name,
            number(constraint.rhs)
        )?;
    }
    Ok(())
}

/// The MPS `BOUNDS` section: every bound that differs from the default `[0, inf)`, and explicit
/// bounds for integer columns.
fn mps_bounds(milp: &Milp, out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "BOUNDS")?;
    for var in &milp.vars {
        let (lower, upper, name) = (var.lower, var.upper, &var.name);
        let mut bound = |kind: &str, value: Option<f64>| match value {
            Some(v) => writeln!(out, " {kind} BND       {name:<8}  {}", number(v)),
            None => writeln!(out, " {kind} BND       {name}"),
        };
        if is_exact_binary(var) {
            bound("BV", None)?;
            continue;
        }
        match (lower == f64::NEG_INFINITY, upper == f64::INFINITY) {
            (true, true) => bound("FR", None)?,
            _ if lower == upper => bound("FX", Some(lower))?,
            (true, false) => {
                bound("MI", None)?;
                bound("UP", Some(upper))?;
            }
            (false, infinite_upper) => {
                // Explicit bounds for integers: some readers give a bare integer column [0, 1].
                if lower != 0.0 || (var.integer && infinite_upper) {
                    bound("LO", Some(lower))?;
                }
                if !infinite_upper {
                    bound("UP", Some(upper))?;
                } else if var.integer {
                    bound("PL", None)?;
                }
            }
        }
    }
    Ok(())
}

/// The objective row's name in MPS files: `obj`, made unique against the constraint names.
fn objective_row_name(milp: &Milp) -> String {
    let mut name = "obj".to_string();
    while milp.constraints.iter().any(|c| c.name == name) {
        name.push('_');
    }
    name
}

/// Binary in the files' sense: integer with bounds exactly [0, 1].
fn is_exact_binary(var: &absinthe_model::encodings::lp::Var) -> bool {
    var.integer && var.lower == 0.0 && var.upper == 1.0
}

/// Refuses what the formats cannot carry: non-finite numbers, NaN or inverted bounds, names
/// that are empty or contain anything but `[A-Za-z0-9_]`, and (for LP) names an LP reader would
/// take for a number.
fn check(milp: &Milp, lp: bool) -> io::Result<()> {
    let invalid = |what: String| Err(io::Error::new(io::ErrorKind::InvalidInput, what));
    let check_name = |kind: &str, name: &str| {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return invalid(format!("{kind} name `{name}` is not made of [A-Za-z0-9_]"));
        }
        if lp && looks_numeric(name) {
            return invalid(format!(
                "{kind} name `{name}` would read as a number in an LP file"
            ));
        }
        Ok(())
    };
    for var in &milp.vars {
        check_name("variable", &var.name)?;
        if var.lower.is_nan() || var.upper.is_nan() || var.lower > var.upper {
            return invalid(format!(
                "variable `{}` has bounds [{}, {}]",
                var.name, var.lower, var.upper
            ));
        }
        if var.lower == f64::INFINITY || var.upper == f64::NEG_INFINITY {
            return invalid(format!(
                "variable `{}` has bounds [{}, {}]",
                var.name, var.lower, var.upper
            ));
        }
    }
    let check_terms = |place: &str, terms: &[(VarId, f64)]| {
        for &(var, coef) in terms {
            if var.0 >= milp.vars.len() {
                return invalid(format!("{place} refers to variable #{}", var.0));
            }
            if !coef.is_finite() {
                return invalid(format!("{place} has coefficient {coef}"));
            }
        }
        Ok(())
    };
    check_terms("the objective", &milp.objective.terms)?;
    if !milp.objective.constant.is_finite() {
        return invalid(format!(
            "the objective constant is {}",
            milp.objective.constant
        ));
    }
    for constraint in &milp.constraints {
        check_name("constraint", &constraint.name)?;
        check_terms(
            &format!("constraint `{}`", constraint.name),
            &constraint.terms,
        )?;
        if !constraint.rhs.is_finite() {
            return invalid(format!(
                "constraint `{}` has right-hand side {}",
                constraint.name, constraint.rhs
            ));
        }
    }
    Ok(())
}

/// Whether an LP reader could take `name` for a number: a leading digit, or `e`/`E` followed
/// only by digits (exponent notation).
fn looks_numeric(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_ascii_digit() => true,
        Some('e' | 'E') => {
            let rest = chars.as_str();
            !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit())
        }
        _ => false,
    }
}

/// The shortest decimal that reads back as `x` (Rust's `{:?}`), for finite `x`.
fn number(x: f64) -> String {
    debug_assert!(x.is_finite());
    if x == 0.0 {
        "0".to_string() // also for -0.0
    } else {
        format!("{x:?}")
    }
}

/// `+ c name` / `- c name`.
fn term(coef: f64, name: &str) -> String {
    let sign = if coef < 0.0 { '-' } else { '+' };
    format!("{sign} {} {name}", number(coef.abs()))
}

/// The expression's terms, repeats merged and zeros dropped.
fn expression_terms(milp: &Milp, terms: &[(VarId, f64)]) -> Vec<String> {
    let expression = absinthe_model::encodings::lp::LinExpr {
        terms: terms.to_vec(),
        constant: 0.0,
    }
    .normalized();
    expression
        .terms
        .iter()
        .map(|&(var, coef)| term(coef, &milp.vars[var.0].name))
        .collect()
}

fn sense_lp(sense: Sense) -> &'static str {
    match sense {
        Sense::Le => "<=",
        Sense::Ge => ">=",
        Sense::Eq => "=",
    }
}

/// ` name: terms relation`, wrapped; an empty expression becomes `0 placeholder`.
fn write_row(
    out: &mut impl Write,
    name: &str,
    mut terms: Vec<String>,
    placeholder: &str,
    relation: &str,
) -> io::Result<()> {
    if terms.is_empty() {
        terms.push(format!("+ 0 {placeholder}"));
    }
    // The first term needs no leading `+`.
    if let Some(rest) = terms[0].strip_prefix("+ ") {
        terms[0] = rest.to_string();
    }
    let mut tokens = vec![format!("{name}:")];
    tokens.extend(terms);
    if !relation.is_empty() {
        tokens.push(relation.to_string());
    }
    write_wrapped(out, tokens.into_iter())
}

/// Writes tokens separated by spaces, each line indented by one space and shorter than
/// [`MAX_LINE`] unless a single token is longer.
fn write_wrapped(out: &mut impl Write, tokens: impl Iterator<Item = String>) -> io::Result<()> {
    let mut line = String::new();
    for token in tokens {
        if !line.is_empty() && line.len() + 1 + token.len() > MAX_LINE {
            writeln!(out, "{line}")?;
            line.clear();
        }
        line.push(' ');
        line.push_str(&token);
    }
    if !line.is_empty() {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use absinthe_model::encodings::lp::{Constraint, LinExpr, Milp, Sense, Var, VarId};

    use super::{write_lp, write_mps};
    use crate::testing::random_milp;

    fn lp_text(milp: &Milp) -> String {
        let mut out = Vec::new();
        write_lp(milp, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn mps_text(milp: &Milp) -> String {
        let mut out = Vec::new();
        write_mps(milp, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Reads back what [`write_mps`] writes (free MPS: NAME, ROWS, COLUMNS with integer
    /// markers, RHS, BOUNDS); enough to check a round trip, not a general MPS reader.
    fn parse_mps(text: &str) -> Milp {
        let mut milp = Milp::default();
        let mut objective_row = String::new();
        let mut rows: HashMap<String, usize> = HashMap::new();
        let mut columns: HashMap<String, usize> = HashMap::new();
        let mut section = "";
        let mut integer = false;
        for line in text.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if !line.starts_with(' ') {
                section = fields[0];
                if section == "NAME" {
                    milp.name = fields.get(1).unwrap_or(&"").to_string();
                }
                continue;
            }
            match section {
                "ROWS" => {
                    let sense = match fields[0] {
                        "N" => {
                            objective_row = fields[1].to_string();
                            continue;
                        }
                        "L" => Sense::Le,
                        "G" => Sense::Ge,
                        "E" => Sense::Eq,
                        other => panic!("row type {other}"),
                    };
                    rows.insert(fields[1].to_string(), milp.constraints.len());
                    milp.constraints.push(Constraint {
                        name: fields[1].to_string(),
                        terms: Vec::new(),
                        sense,
                        rhs: 0.0,
                    });
                }
                "COLUMNS" => {
                    if fields[1] == "'MARKER'" {
                        integer = match fields[2] {
                            "'INTORG'" => true,
                            "'INTEND'" => false,
                            other => panic!("marker {other}"),
                        };
                        continue;
                    }
                    let var = *columns.entry(fields[0].to_string()).or_insert_with(|| {
                        milp.vars.push(Var {
                            name: fields[0].to_string(),
                            lower: 0.0,
                            upper: f64::INFINITY,
                            integer,
                        });
                        milp.vars.len() - 1
                    });
                    for pair in fields[1..].chunks(2) {
                        let coef: f64 = pair[1].parse().unwrap();
                        if coef == 0.0 {
                            continue;
                        }
                        if pair[0] == objective_row {
                            milp.objective.terms.push((VarId(var), coef));
                        } else {
                            milp.constraints[rows[pair[0]]]
                                .terms
                                .push((VarId(var), coef));
                        }
                    }
                }
                "RHS" => {
                    for pair in fields[1..].chunks(2) {
                        let value: f64 = pair[1].parse().unwrap();
                        if pair[0] == objective_row {
                            milp.objective.constant = -value;
                        } else {
                            milp.constraints[rows[pair[0]]].rhs = value;
                        }
                    }
                }
                "BOUNDS" => {
                    let var = &mut milp.vars[columns[fields[2]]];
                    let value = || fields[3].parse::<f64>().unwrap();
                    match fields[0] {
                        "UP" => var.upper = value(),
                        "LO" => var.lower = value(),
                        "FX" => (var.lower, var.upper) = (value(), value()),
                        "MI" => var.lower = f64::NEG_INFINITY,
                        "PL" => var.upper = f64::INFINITY,
                        "FR" => (var.lower, var.upper) = (f64::NEG_INFINITY, f64::INFINITY),
                        "BV" => (var.lower, var.upper, var.integer) = (0.0, 1.0, true),
                        other => panic!("bound type {other}"),
                    }
                }
                other => panic!("section {other}"),
            }
        }
        assert_eq!(section, "ENDATA");
        milp
    }

    /// Every kind of bound and a constant.
    fn assorted() -> Milp {
        let mut milp = Milp::new("assorted");
        let binary = milp.add_binary("binary");
        let general = milp.add_var("general", 0.0, f64::INFINITY, true);
        let boxed_int = milp.add_var("boxed_int", -3.0, 7.0, true);
        let fixed = milp.add_var("fixed", 2.5, 2.5, false);
        let free = milp.add_var("free", f64::NEG_INFINITY, f64::INFINITY, false);
        let free_int = milp.add_var("free_int", f64::NEG_INFINITY, f64::INFINITY, true);
        let upper_only = milp.add_var("upper_only", f64::NEG_INFINITY, -1.25, false);
        let lower_only = milp.add_var("lower_only", 0.1, f64::INFINITY, false);
        let unit = milp.add_var("unit_continuous", 0.0, 1.0, false);
        let tiny = milp.add_var("tiny", 1e-300, 1e300, false);
        let unused = milp.add_var("unused", 0.0, 4.0, false);
        let _ = unused;
        let all = [
            binary, general, boxed_int, fixed, free, free_int, upper_only, lower_only,
        ];
        let mut sum = LinExpr::new();
        for (i, &v) in all.iter().enumerate() {
            sum.add(v, 0.1 * (i as f64 + 1.0));
        }
        milp.add_constraint("sum", &sum, Sense::Le, 1.0 / 3.0);
        milp.add_constraint(
            "pair",
            LinExpr::term(unit, -2.0).add(tiny, 1e-7),
            Sense::Ge,
            -12345.678901234567,
        );
        milp.add_constraint("fix", &LinExpr::term(free_int, 3.0), Sense::Eq, 0.0);
        let mut objective = LinExpr::term(general, 1.0 / 7.0);
        objective.add(free, -2.0).add(tiny, 6.02214076e23);
        objective.constant = -42.125;
        milp.set_objective(&objective);
        milp
    }

    #[test]
    fn mps_round_trips() {
        let mut milps: Vec<Milp> = (0..50).map(random_milp).collect();
        milps.push(assorted());
        for milp in &milps {
            assert_eq!(&parse_mps(&mps_text(milp)), milp, "{}", mps_text(milp));
        }
    }

    #[test]
    fn files_name_every_variable_and_constraint() {
        let mut milps: Vec<Milp> = (0..50).map(random_milp).collect();
        milps.push(assorted());
        for milp in &milps {
            for text in [lp_text(milp), mps_text(milp)] {
                let tokens: Vec<&str> = text
                    .split(|c: char| c.is_whitespace() || c == ':')
                    .collect();
                for name in milp
                    .vars
                    .iter()
                    .map(|v| &v.name)
                    .chain(milp.constraints.iter().map(|c| &c.name))
                {
                    assert!(
                        tokens.contains(&name.as_str()),
                        "{name} missing from\n{text}"
                    );
                }
                let lowered = text.to_lowercase();
                assert!(!lowered.contains("nan"), "{text}");
                assert!(
                    !lowered.replace("-infinity <=", "").contains("inf"),
                    "{text}"
                );
            }
        }
    }

    #[test]
    fn lp_sections_and_bounds() {
        let text = lp_text(&assorted());
        let expected_lines = [
            "Minimize",
            " obj: 0.14285714285714285 general - 2.0 free + 6.02214076e23 tiny - 42.125 obj_constant",
            "Subject To",
            " fix: 3.0 free_int = 0",
            " pair: - 2.0 unit_continuous + 1e-7 tiny >= -12345.678901234567",
            " -3.0 <= boxed_int <= 7.0",
            " fixed = 2.5",
            " free free",
            " free_int free",
            " -infinity <= upper_only <= -1.25",
            " lower_only >= 0.1",
            " 0 <= unit_continuous <= 1.0",
            " 1e-300 <= tiny <= 1e300",
            " 0 <= unused <= 4.0",
            " obj_constant = 1",
            "General",
            " general boxed_int free_int",
            "Binary",
            " binary",
            "End",
        ];
        for line in expected_lines {
            assert!(
                text.lines().any(|l| l == line),
                "no line `{line}` in\n{text}"
            );
        }
        // Sections in order.
        let position = |s: &str| text.find(&format!("\n{s}\n")).unwrap();
        assert!(position("Subject To") < position("Bounds"));
        assert!(position("Bounds") < position("General"));
        assert!(position("General") < position("Binary"));
        assert!(text.ends_with("End\n"));
    }

    #[test]
    fn long_rows_are_wrapped() {
        let mut milp = Milp::new("long");
        let vars: Vec<VarId> = (0..300)
            .map(|i| milp.add_var(format!("variable_with_a_long_name_{i}"), 0.0, 1.0, false))
            .collect();
        let terms = LinExpr {
            terms: vars.iter().map(|&v| (v, -1.0 / 3.0)).collect(),
            constant: 0.0,
        };
        milp.add_constraint("everything", &terms, Sense::Ge, -50.0);
        milp.set_objective(&terms);
        let text = lp_text(&milp);
        assert!(text.lines().all(|l| l.len() < 255));
        assert!(text.lines().count() > 100);
        // Wrapping never splits a term.
        for line in text.lines().filter(|l| l.contains("variable_with")) {
            assert!(!line.trim_end().ends_with('-'), "{line}");
        }
    }

    #[test]
    fn unwritable_models_are_refused() {
        let mut milp = assorted();
        milp.constraints[0].rhs = f64::INFINITY;
        let error = write_lp(&milp, &mut Vec::new()).unwrap_err();
        assert!(error.to_string().contains("`sum`"), "{error}");
        assert!(write_mps(&milp, &mut Vec::new()).is_err());
        let mut milp = assorted();
        milp.vars[0].name = "e12".into();
        assert!(write_lp(&milp, &mut Vec::new()).is_err());
        assert!(write_mps(&milp, &mut Vec::new()).is_ok());
        milp.vars[0].name = "has space".into();
        assert!(write_mps(&milp, &mut Vec::new()).is_err());
    }
}
