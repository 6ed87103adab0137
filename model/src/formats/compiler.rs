//! The `compiler:` section of a machine file: how `learn` and `bench` compile generated code
//! (docs/MODEL.md, "Machine file").

use serde::{Deserialize, Serialize};

use crate::formats::diagnostic::{control_character_in, Diagnostic};
use crate::formats::limits;
use crate::formats::yaml;

/// How the timed (FMA) build divides by a literal that is not a power of two
/// (docs/decisions/0054-division-by-a-literal-through-its-reciprocal.md). Both give the correctly
/// rounded quotient; which is faster depends on the CPU, and `learn` measures it
/// (`learn::division`). Exact builds, the reference and CUDA code always divide.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Division {
    /// Through the reciprocal and FMAs (`absinthe_divide_by` in the generated prelude).
    #[default]
    Reciprocal,
    /// A division instruction (`x / y`).
    Divide,
}

impl Division {
    pub fn is_default(&self) -> bool {
        *self == Division::Reciprocal
    }

    pub fn name(self) -> &'static str {
        match self {
            Division::Reciprocal => "reciprocal",
            Division::Divide => "divide",
        }
    }
}

/// How generated code is compiled by `learn` and `bench`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compiler {
    /// The compiler command [default: `g++`].
    #[serde(default = "default_cxx", deserialize_with = "yaml::text")]
    pub cxx: String,
    /// [default: `-O3 -march=native -fopenmp`; each key of the section has its own default].
    #[serde(default = "default_flags", deserialize_with = "yaml::text")]
    pub flags: Vec<String>,
    /// How the timed build divides by literals; `learn` chooses it by measurement.
    #[serde(default, skip_serializing_if = "Division::is_default")]
    pub division: Division,
    /// Flags `learn` may add to [`Compiler::base_flags`]: it times learn's kernels built with
    /// the base flags and with each candidate added, and writes the fastest set into `flags`
    /// (`learn::flags`). Empty: `flags` stay as they are.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "yaml::text"
    )]
    pub candidates: Vec<Vec<String>>,
}

fn default_cxx() -> String {
    "g++".into()
}

fn default_flags() -> Vec<String> {
    vec!["-O3".into(), "-march=native".into(), "-fopenmp".into()]
}

impl Default for Compiler {
    fn default() -> Self {
        Compiler {
            cxx: default_cxx(),
            flags: default_flags(),
            division: Division::Reciprocal,
            candidates: Vec::new(),
        }
    }
}

impl Compiler {
    /// What `learn` starts from: `flags` without the candidate that ends them, when one does
    /// (learn writes a chosen candidate's flags after the base flags), else `flags` whole. So a
    /// learned file learns again from the same base, and a candidate that repeats one of the
    /// base flags (`[-O3]`) leaves that flag in the base.
    pub fn base_flags(&self) -> Vec<String> {
        let chosen = self
            .candidates
            .iter()
            .filter(|c| !c.is_empty() && self.flags.ends_with(c))
            .map(Vec::len)
            .max()
            .unwrap_or(0);
        self.flags[..self.flags.len() - chosen].to_vec()
    }

    /// The flag sets `learn` chooses among: the base flags, then each candidate added to them.
    pub fn flag_sets(&self) -> Vec<Vec<String>> {
        let base = self.base_flags();
        std::iter::once(base.clone())
            .chain(self.candidates.iter().map(|c| {
                let mut set = base.clone();
                set.extend(c.iter().cloned());
                set
            }))
            .collect()
    }

    pub(crate) fn validate(&self, errors: &mut Vec<Diagnostic>) {
        if self.cxx.trim().is_empty() {
            errors.push(Diagnostic::new(
                "compiler.cxx",
                "the compiler command is empty",
            ));
        }
        errors.extend(control_character_in(
            &self.cxx,
            "compiler.cxx",
            "the command",
            "it",
        ));
        if self.flags.is_empty() {
            errors.push(Diagnostic::new(
                "compiler.flags",
                "no flags builds without optimisation; leave `flags` out for the default (-O3 -march=native -fopenmp), or name the flags meant",
            ));
        }
        for (n, f) in self.flags.iter().enumerate() {
            flag_errors(f, &format!("compiler.flags[{n}]"), errors);
        }
        if self.candidates.len() > limits::MAX_FLAG_CANDIDATES {
            errors.push(Diagnostic::new(
                "compiler.candidates",
                format!(
                    "at most {} candidates, found {}",
                    limits::MAX_FLAG_CANDIDATES,
                    self.candidates.len()
                ),
            ));
        }
        for (n, c) in self.candidates.iter().enumerate() {
            if c.is_empty() {
                errors.push(Diagnostic::new(
                    format!("compiler.candidates[{n}]"),
                    "a candidate adds no flag",
                ));
            }
            for (m, f) in c.iter().enumerate() {
                flag_errors(f, &format!("compiler.candidates[{n}][{m}]"), errors);
            }
        }
    }
}

/// A flag that is empty, or holds a control character (printed as it is in progress lines).
fn flag_errors(flag: &str, key: &str, errors: &mut Vec<Diagnostic>) {
    if flag.trim().is_empty() {
        errors.push(Diagnostic::new(key, "a flag is empty"));
    } else {
        errors.extend(control_character_in(flag, key, "the flag", "it"));
    }
}

#[cfg(test)]
mod tests {
    use super::{Compiler, Division};

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_flag_sets_start_from_the_flags_without_the_chosen_candidate() {
        let learned = "-O3 -march=native -fopenmp -mtune=x -mprefer-vector-width=512";
        let c = Compiler {
            cxx: "g++".into(),
            flags: learned.split(' ').map(String::from).collect(),
            division: Division::Reciprocal,
            candidates: vec![
                strings(&["-mtune=x", "-mprefer-vector-width=512"]),
                strings(&["-O2"]),
            ],
        };
        let base = strings(&["-O3", "-march=native", "-fopenmp"]);
        assert_eq!(c.base_flags(), base);
        // A candidate repeating a base flag does not take it out of the base; flags that only
        // share some of a candidate's stay whole.
        let repeat = Compiler {
            candidates: vec![strings(&["-O3"]), strings(&["-fopenmp", "-mtune=x"])],
            ..c.clone()
        };
        assert_eq!(repeat.base_flags(), c.flags);
        let longest = Compiler {
            candidates: vec![
                strings(&["-mprefer-vector-width=512"]),
                c.candidates[0].clone(),
            ],
            ..c.clone()
        };
        assert_eq!(longest.base_flags(), base);
        let sets = c.flag_sets();
        assert_eq!(sets.len(), 3);
        assert_eq!(sets[0], base);
        assert_eq!(
            sets[1],
            strings(&[
                "-O3",
                "-march=native",
                "-fopenmp",
                "-mtune=x",
                "-mprefer-vector-width=512"
            ])
        );
        assert_eq!(
            sets[2],
            strings(&["-O3", "-march=native", "-fopenmp", "-O2"])
        );
        let plain = Compiler::default();
        assert_eq!(plain.flag_sets(), vec![plain.flags.clone()]);
    }
}
