//! The ABSINTHE optimisation problem for an SMT solver, in exact arithmetic (docs/MODEL.md,
//! "Exact arithmetic and verification"), written as SMT-LIB 2 text so that any SMT solver can
//! read it (`solve --emit smt2`) and the `solvers` crate's Z3 backend can parse it.
//!
//! Two encodings of the same problem:
//! - [`Encoding::Linear`]: the linearized MILP of [`crate::encodings::milp::milp`] row for row (integer and
//!   real variables, linear rows: QF_LIRA). Its coefficients are f64 in the
//!   [`Milp`](crate::encodings::lp::Milp); each is taken as the exact rational of its shortest round-trip
//!   decimal ([`crate::cost_model::exact::decimal`]), i.e. the number the LP/MPS writers print. The MILP
//!   objective is in microseconds.
//! - [`Encoding::Nonlinear`]: the model itself, without linearization: tile counts are integer
//!   variables, the peel and body counts are their products with the (grouping-dependent,
//!   constant) weights, maxima are `ite`, and the even-tiles and parallel constraints multiply
//!   integer variables (QF_NIRA). The objective is a sum over every contiguous range of stencils
//!   of "this range is a group" times its cost, so the encoding grows as N³: for small programs.
//!   The parameters are the exact decimals of the machine file, so this encoding is exact.
//!
//! Both name the group cuts `cut_S` (0/1 integers, `cut_S = g_{S+1} - g_S`) and the tile counts
//! `n_DS` (D in i, j, k) the same way, so [`Smt::decode`] reads a configuration out of either,
//! and both declare a real `objective` equal to the objective in microseconds.
//!
//! [`soundness_queries`] states, for every binary-digit product and exact maximum of the MILP,
//! "the rows hold and the output differs from the product (maximum)": each must be UNSAT.
//!
//! The parts, one file each: SMT-LIB terms of MILP rows and rationals (`terms`), the two
//! encodings (`linear`, `nonlinear`) and the soundness queries (`soundness`).

use std::fmt::Write as _;

use num_traits::Signed;

use crate::cost_model::evaluate::Configuration;
use crate::cost_model::exact::Rational;
use crate::cost_model::options::MilpOptions;
use crate::encodings::milp::milp;
use crate::formats::machine::ModelMachine;
use crate::language::analysis::Analysis;

mod linear;
mod nonlinear;
mod soundness;
mod terms;

pub use linear::{linear, linear_absinthe};
pub use nonlinear::nonlinear;
pub use soundness::{
    soundness_queries, soundness_queries_of, DigitRange, QueryKind, SoundnessQuery,
};
pub use terms::{parse_value, real};

/// Which of the two encodings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// The linearized MILP in exact rationals (QF_LIRA).
    Linear,
    /// The model with genuine products (QF_NIRA), for small programs.
    Nonlinear,
}

/// The sort of a declared constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sort {
    Int,
    Real,
}

/// The name of the real constant that equals the objective (microseconds).
pub const OBJECTIVE: &str = "objective";

/// An SMT problem: declarations, assertions, and optionally an objective to minimise.
#[derive(Clone, Debug, PartialEq)]
pub struct Smt {
    pub logic: &'static str,
    pub declarations: Vec<(String, Sort)>,
    /// SMT-LIB terms of sort Bool.
    pub assertions: Vec<String>,
    /// Whether [`OBJECTIVE`] is declared and should be minimised.
    pub minimise: bool,
    /// Cut constant per stencil but the last (empty when not an ABSINTHE problem).
    pub cuts: Vec<String>,
    /// Tile-count constants per stencil.
    pub tile_counts: Vec<[String; 3]>,
    /// Stream flag constants per stencil (0 or 1, equal within a group).
    pub streams: Vec<String>,
}

impl Smt {
    fn new(logic: &'static str) -> Self {
        Smt {
            logic,
            declarations: Vec::new(),
            assertions: Vec::new(),
            minimise: false,
            cuts: Vec::new(),
            tile_counts: Vec::new(),
            streams: Vec::new(),
        }
    }

    fn declare(&mut self, name: impl Into<String>, sort: Sort) -> String {
        let name = name.into();
        self.declarations.push((name.clone(), sort));
        name
    }

    /// Declarations and assertions, without commands (what a solver's `from_string` reads).
    pub fn script(&self) -> String {
        let mut out = String::new();
        for (name, sort) in &self.declarations {
            let sort = match sort {
                Sort::Int => "Int",
                Sort::Real => "Real",
            };
            let _ = writeln!(out, "(declare-fun {name} () {sort})");
        }
        for a in &self.assertions {
            let _ = writeln!(out, "(assert {a})");
        }
        out
    }

    /// A complete SMT-LIB 2 file: the script, `minimize` when there is an objective (a Z3 /
    /// OptiMathSAT extension), `check-sat` and `get-model`.
    pub fn to_smt2(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "; absinthe: {} constants, {} assertions",
            self.declarations.len(),
            self.assertions.len()
        );
        if self.minimise {
            let _ = writeln!(
                out,
                "; `{OBJECTIVE}` is the model's objective in microseconds"
            );
        }
        let _ = writeln!(out, "(set-logic {})", self.logic);
        out.push_str(&self.script());
        if self.minimise {
            let _ = writeln!(out, "(minimize {OBJECTIVE})");
        }
        out.push_str("(check-sat)\n(get-model)\n");
        out
    }

    /// Adds `objective < bound` (microseconds).
    pub fn objective_below(&mut self, bound: &Rational) {
        self.assertions
            .push(format!("(< {OBJECTIVE} {})", real(bound)));
        self.minimise = false;
    }

    /// The configuration of a model, given the values of its constants by name.
    pub fn decode(&self, value: impl Fn(&str) -> Option<Rational>) -> Option<Configuration> {
        let int = |name: &str| -> Option<usize> {
            let v = value(name)?;
            if !v.is_integer() || v.is_negative() {
                return None;
            }
            v.to_integer().to_string().parse().ok()
        };
        let mut groups = vec![0usize; self.tile_counts.len()];
        for i in 1..groups.len() {
            groups[i] = groups[i - 1] + int(&self.cuts[i - 1])?.min(1);
        }
        let mut tiles = Vec::new();
        let mut stream = Vec::new();
        for (i, &g) in groups.iter().enumerate() {
            if i == 0 || g != groups[i - 1] {
                let mut t = [0; 3];
                for (slot, name) in t.iter_mut().zip(&self.tile_counts[i]) {
                    *slot = int(name)?;
                }
                tiles.push(t);
                if self.streams.get(i).is_some_and(|s| int(s) == Some(1)) {
                    stream.push(g);
                }
            }
        }
        Some(Configuration {
            groups,
            tiles,
            stream,
        })
    }
}

/// The problem of `analysis` on `machine` in the chosen encoding.
pub fn smt(
    analysis: &Analysis,
    machine: &ModelMachine,
    options: &MilpOptions,
    encoding: Encoding,
) -> Smt {
    match encoding {
        Encoding::Linear => linear_absinthe(&milp(analysis, machine, options)),
        Encoding::Nonlinear => nonlinear(analysis, machine, options),
    }
}
