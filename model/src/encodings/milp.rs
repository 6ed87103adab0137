//! The linearized MILP of the ABSINTHE model, the digits encoding (docs/MODEL.md, "Encodings").
//!
//! Variables, per stencil i: group-cut binaries `cut_i = g_{i+1} - g_i` and integer group
//! indices `g_i`; tile counts `n_i^d` as sums of binary digits; evaluation widths `e_i^{d±}`;
//! load lines, running maxima and their selectors; the products of tile counts with weights as
//! binary-digit products; peel and body times as `≥` both branches of their max.
//!
//! Exactness: "same group" tests are exact (for contiguous groups, `same(j, i)` is the
//! conjunction of "no cut between j and i", linearized by its convex hull); loads `ℓ_{i,a}` and
//! stores `w_i` are exact linear functions of them; evaluation widths are exact (a selector per
//! reader) wherever they feed a running maximum; the running maxima of the load growth are
//! exact. Everything else uses `≥`, exact at the optimum because all costs are non-negative and
//! grow with it. The objective is in microseconds (see [`OBJECTIVE_SCALE`]).

use std::collections::HashMap;

use crate::analysis::{Analysis, ArrayId, ArrayKind};
use crate::cost::{
    cache_capacity, limits_arrays, stream_shape, Configuration, StreamShape, STORE_WEIGHT,
    STREAM_TILES_X,
};
pub use crate::cost_model::options::{Encoding, MilpOptions};
use crate::formula;
use crate::linearize::{
    and_not, gated, gated_lower, lower_bound, mccormick, recorded_max, recorded_product,
    switched_max, upper_bound, Linearization,
};
use crate::lp::{LinExpr, Milp, Sense, VarId};
use crate::machine::ModelMachine;
use crate::program::DIMS;

/// Why the digits MILP and the SMT encodings refuse a GPU machine: their cache rows count arrays
/// times tile cells (the CPU test), while on a GPU the model counts the tile buffers a thread
/// block keeps in shared memory, halos and rolling windows included
/// (`cost::GroupShape::shared_values`), a test only the range table evaluates exactly.
pub const GPU_DIGITS_UNSUPPORTED: &str = "the digits MILP and the SMT encodings model a CPU cache, not the shared memory of a GPU thread block; on a GPU machine use the ranges encoding (the default) or --solver dp, which evaluate the GPU model exactly";

/// `Err` with [`GPU_DIGITS_UNSUPPORTED`] when `machine` is a GPU: for the commands that need the
/// digits MILP or an SMT encoding.
pub fn digits_supported(machine: &ModelMachine) -> Result<(), &'static str> {
    if machine.gpu {
        Err(GPU_DIGITS_UNSUPPORTED)
    } else {
        Ok(())
    }
}

/// Objective units per second: the MILP objective is in microseconds.
pub const OBJECTIVE_SCALE: f64 = 1e6;

/// A MILP of either encoding, with what is needed to read a configuration back.
#[derive(Clone, Debug)]
pub enum Encoded {
    Digits(AbsintheMilp),
    Ranges(crate::ranges::RangeMilp),
}

impl Encoded {
    /// Builds the MILP of `options.encoding`.
    pub fn build(analysis: &Analysis, machine: &ModelMachine, options: &MilpOptions) -> Encoded {
        match options.encoding {
            Encoding::Digits => Encoded::Digits(milp(analysis, machine, options)),
            Encoding::Ranges => {
                Encoded::Ranges(crate::ranges::range_milp(analysis, machine, options))
            }
        }
    }

    pub fn milp(&self) -> &Milp {
        match self {
            Encoded::Digits(m) => &m.milp,
            Encoded::Ranges(m) => &m.milp,
        }
    }

    pub fn decode(&self, values: &[f64]) -> Configuration {
        match self {
            Encoded::Digits(m) => m.decode(values),
            Encoded::Ranges(m) => m.decode(values),
        }
    }

    pub fn fixed_to(&self, config: &Configuration) -> Milp {
        match self {
            Encoded::Digits(m) => m.fixed_to(config),
            Encoded::Ranges(m) => m.fixed_to(config),
        }
    }
}

/// The MILP with the handles needed to read a configuration back.
#[derive(Clone, Debug)]
pub struct AbsintheMilp {
    pub milp: Milp,
    /// `cut_i = g_{i+1} - g_i`, binary, one per stencil but the last.
    pub cuts: Vec<VarId>,
    /// Group index per stencil (integer; `g_0` fixed to 0).
    pub group_index: Vec<VarId>,
    /// Tile counts per stencil and dimension (integer).
    pub tile_counts: Vec<[VarId; 3]>,
    /// Binary digits of each tile count, least significant first.
    pub tile_bits: Vec<[Vec<VarId>; 3]>,
    /// Stream flag per stencil (binary, equal within a group).
    pub streams: Vec<VarId>,
    /// The program's domain and stream shape (decoding makes the stream flags canonical).
    pub domain: [usize; 3],
    pub stream_shape: Option<StreamShape>,
    /// Every binary-digit product and exact maximum, with the rows that encode it (for the
    /// soundness proofs of `smt::soundness_queries`).
    pub linearizations: Vec<Linearization>,
}

impl AbsintheMilp {
    /// Reads the configuration from a solver's values (rounding integers).
    pub fn decode(&self, values: &[f64]) -> Configuration {
        let mut groups = vec![0usize; self.tile_counts.len()];
        for i in 1..groups.len() {
            groups[i] = groups[i - 1] + (values[self.cuts[i - 1].0] > 0.5) as usize;
        }
        let mut tiles = Vec::new();
        for (i, &g) in groups.iter().enumerate() {
            if i == 0 || g != groups[i - 1] {
                tiles.push(self.tile_counts[i].map(|v| values[v.0].round().max(1.0) as usize));
            }
        }
        // The stream flags the solver chose are feasible, and so are the canonical ones (the
        // time does not depend on them; the canonical choice never grows the working set).
        Configuration::new(groups, tiles).smallest_working_set(self.domain, self.stream_shape)
    }

    /// A copy of the MILP with the grouping and tile counts fixed to `config` (an LP in effect):
    /// solving it gives the model's objective of exactly that configuration.
    pub fn fixed_to(&self, config: &Configuration) -> Milp {
        let mut m = self.milp.clone();
        let fix = |m: &mut Milp, v: VarId, x: f64| {
            m.vars[v.0].lower = x;
            m.vars[v.0].upper = x;
        };
        for (i, &c) in self.cuts.iter().enumerate() {
            fix(
                &mut m,
                c,
                (config.groups[i + 1] != config.groups[i]) as u8 as f64,
            );
        }
        for (i, &g) in config.groups.iter().enumerate() {
            fix(&mut m, self.streams[i], config.streams(g) as u8 as f64);
            let t = config.tiles[g];
            for d in 0..3 {
                fix(&mut m, self.tile_counts[i][d], t[d] as f64);
                for (k, &b) in self.tile_bits[i][d].iter().enumerate() {
                    fix(&mut m, b, ((t[d] >> k) & 1) as f64);
                }
            }
        }
        m
    }
}

struct Builder {
    milp: Milp,
    cuts: Vec<VarId>,
    same_memo: HashMap<(usize, usize), LinExpr>,
    bits: Vec<[Vec<VarId>; 3]>,
    linearizations: Vec<Linearization>,
    tile_range: [(usize, usize); 3],
}

impl Builder {
    fn upper(&self, e: &LinExpr) -> f64 {
        upper_bound(&self.milp, e)
    }

    /// `same(j, i)` for `j <= i`: 1 when no cut lies between them. Exact.
    fn same(&mut self, j: usize, i: usize) -> LinExpr {
        if j == i {
            return LinExpr::constant(1.0);
        }
        if i == j + 1 {
            return LinExpr::constant(1.0).plus(&LinExpr::var(self.cuts[j]), -1.0);
        }
        if let Some(e) = self.same_memo.get(&(j, i)) {
            return e.clone();
        }
        let prev = self.same(j, i - 1);
        let s = and_not(
            &mut self.milp,
            &prev,
            self.cuts[i - 1],
            &format!("same_{j}_{i}"),
        );
        self.same_memo.insert((j, i), s.clone());
        s
    }

    /// `n_i^d * y` for `0 <= y <= y_max`, exactly.
    fn times_tiles(&mut self, i: usize, d: usize, y: &LinExpr, y_max: f64, name: &str) -> LinExpr {
        let bits = self.bits[i][d].clone();
        let name = format!("{name}_{}{i}", DIMS[d]);
        let (output, record) = recorded_product(&mut self.milp, &bits, y, y_max, &name);
        if !record.vars().is_empty() {
            self.linearizations.push(record);
        }
        // The digit rows define the product; the McCormick rows only tighten the relaxation.
        let (lo, hi) = self.tile_range[d];
        let y_lo = lower_bound(&self.milp, y).max(0.0);
        mccormick(
            &mut self.milp,
            &bits,
            (lo as f64, hi as f64),
            y,
            (y_lo, y_max),
            &output,
            &name,
        );
        output
    }

    fn tiles_expr(&self, i: usize, d: usize) -> LinExpr {
        let mut e = LinExpr::new();
        for (k, &b) in self.bits[i][d].iter().enumerate() {
            e.add(b, (1u64 << k) as f64);
        }
        e
    }

    fn gated_lower(&mut self, x: &LinExpr, flag: &LinExpr, x_max: f64, name: &str) -> LinExpr {
        gated_lower(&mut self.milp, x, flag, x_max, name)
    }

    /// `|a - b| <= cut_k`: two binaries equal unless the group is cut after stencil `k` (rows
    /// `{name}_eq_up` and `{name}_eq_down`).
    fn equal_unless_cut(&mut self, name: &str, a: VarId, b: VarId, k: usize) {
        let mut diff = LinExpr::var(a);
        diff.add(b, -1.0);
        let bound = LinExpr::var(self.cuts[k]);
        self.milp
            .add_relation(format!("{name}_eq_up"), &diff, Sense::Le, &bound);
        self.milp.add_relation(
            format!("{name}_eq_down"),
            &diff.scaled(-1.0),
            Sense::Le,
            &bound,
        );
    }

    /// Stencil `i`'s crowded flag (`cost::crowded`), when the machine charges crowding: a
    /// binary `crowded_i`, equal within a group, and the group's stream weight up to `i`,
    /// `S_i >= s_i + same(i-1, i) S_{i-1}` (a prefix of the group's `Σ s`; the rows below hold
    /// for the whole group at its last stencil, and the earlier ones are implied). Returns the
    /// flag, the prefix and the `whole_rows_i` binary (1 only when `n^x = 1`); the caller adds
    /// the two threshold rows ([`Builder::crowded_rows`]) once `n^y n^z` is formed.
    fn crowded_flag(
        &mut self,
        i: usize,
        s_weight: &LinExpr,
        prefix_prev: Option<&LinExpr>,
        flags: &[VarId],
    ) -> (VarId, LinExpr, VarId) {
        let flag = self.milp.add_binary(format!("crowded_{i}"));
        if i > 0 {
            self.equal_unless_cut(&format!("crowded_{i}"), flag, flags[i - 1], i - 1);
        }
        let mut prefix = s_weight.clone();
        if let Some(prev) = prefix_prev {
            let prev_ub = self.upper(prev);
            let same = self.same(i - 1, i);
            let carried = self.gated_lower(prev, &same, prev_ub, &format!("streams_{i}"));
            prefix.add_expr(&carried, 1.0);
        }
        // whole_rows = 1 only when n^x = 1: n^x + (hi - 1) whole_rows <= hi.
        let whole = self.milp.add_binary(format!("whole_rows_{i}"));
        let x_hi = self.tile_range[0].1 as f64;
        let mut row = self.tiles_expr(i, 0);
        row.add(whole, x_hi - 1.0);
        self.milp
            .add_constraint(format!("whole_rows_{i}_le"), &row, Sense::Le, x_hi);
        (flag, prefix.normalized(), whole)
    }

    /// The two threshold rows of [`Builder::crowded_flag`], with the group's stream weight
    /// `S` (its prefix at `i`), the limit `L` and `N^{yz} = n^y n^z`: with whole rows `S D^z
    /// <= L n^z + M (crowded + 1 - whole)`, else `S D^y D^z <= L N^{yz} + M (crowded + whole)`.
    /// The first is the weaker one when `n^x = 1` (`n^y <= D^y`), so the solver sets `whole`
    /// exactly when it may, and `crowded` is 0 exactly when `cost::crowded` is false.
    #[allow(clippy::too_many_arguments)]
    fn crowded_rows(
        &mut self,
        i: usize,
        dom: [usize; 3],
        limit: u64,
        (flag, prefix, whole): (VarId, &LinExpr, VarId),
        nz: &LinExpr,
        nyz: &LinExpr,
    ) {
        let limit = limit as f64;
        let (dy, dz) = (dom[1] as f64, dom[2] as f64);
        let s_ub = self.upper(prefix);
        let big = s_ub * dz;
        // S D^z - L n^z - M crowded + M whole <= M
        let mut row = prefix.scaled(dz).plus(nz, -limit);
        row.add(flag, -big).add(whole, big);
        self.milp
            .add_constraint(format!("crowded_{i}_rows"), &row, Sense::Le, big);
        let big = s_ub * dy * dz;
        // S D^y D^z - L N^{yz} - M crowded - M whole <= 0
        let mut row = prefix.scaled(dy * dz).plus(nyz, -limit);
        row.add(flag, -big).add(whole, -big);
        self.milp
            .add_constraint(format!("crowded_{i}_planes"), &row, Sense::Le, 0.0);
    }
}

/// `formula`'s algebra over the MILP of stencil `i`: counts are expressions with their upper
/// bounds, a tile count times an expression is a binary-digit product (McCormick rows added,
/// memoised per expression), seconds are in objective units, and `max(fast, slow)` is a
/// variable `≥` both (exact at the optimum: every cost is non-negative and only grows with it).
/// A product `n^d y` by dimension and `y`'s terms and constant (as bits).
type ProductKey = (usize, Vec<(usize, u64)>, u64);

struct MilpTerms<'a> {
    b: &'a mut Builder,
    i: usize,
    params: [[f64; 2]; 4],
    memo: HashMap<ProductKey, (LinExpr, f64)>,
    /// The stencil's crowded flag (binary, equal within its group) and the charge `Q^b`, when
    /// the machine charges crowding.
    crowd: Option<(VarId, f64)>,
}

impl formula::Algebra for MilpTerms<'_> {
    type Count = (LinExpr, f64);
    type Time = LinExpr;
    fn count_sum(&mut self, terms: &[(u128, &(LinExpr, f64))]) -> (LinExpr, f64) {
        let mut e = LinExpr::new();
        let mut ub = 0.0;
        for (k, (x, x_ub)) in terms {
            e.add_expr(x, *k as f64);
            ub += *k as f64 * x_ub;
        }
        (e.normalized(), ub)
    }
    fn times_tiles(&mut self, d: usize, (y, y_ub): &(LinExpr, f64)) -> (LinExpr, f64) {
        let y = y.normalized();
        let n_hi = self.b.tile_range[d].1 as f64;
        if y.terms.is_empty() {
            return (
                self.b.tiles_expr(self.i, d).scaled(y.constant),
                y.constant * n_hi,
            );
        }
        // `n (k y') = k (n y')`: the product is formed (and shared) for `y'`, the expression
        // scaled to a first coefficient of 1, so that `n E` and `n c E` share one product. Only
        // when every coefficient of `y'` stays an integer, so that the rows stay exact.
        let k = y.terms[0].1;
        let integral = |c: f64| (c / k).fract() == 0.0;
        if k > 0.0 && k != 1.0 && y.terms.iter().all(|&(_, c)| integral(c)) && integral(y.constant)
        {
            // Divided, not multiplied by 1/k: the quotients are exact integers.
            let mut unit_expr = LinExpr::constant(y.constant / k);
            for &(v, c) in &y.terms {
                unit_expr.add(v, c / k);
            }
            let unit = (unit_expr, y_ub / k);
            let (p, _) = self.times_tiles(d, &unit);
            return (p.scaled(k), y_ub * n_hi);
        }
        let key = (
            d,
            y.terms.iter().map(|&(v, c)| (v.0, c.to_bits())).collect(),
            y.constant.to_bits(),
        );
        if let Some(p) = self.memo.get(&key) {
            return p.clone();
        }
        let name = format!("p{}", self.memo.len());
        let p = self.b.times_tiles(self.i, d, &y, *y_ub, &name);
        let out = (p, y_ub * n_hi);
        self.memo.insert(key, out.clone());
        out
    }
    fn param_is_zero(&self, part: formula::Part, term: formula::Term) -> bool {
        // The crowding charge multiplies the stream body's count.
        let crowding =
            self.crowd.is_some() && part == formula::Part::Stream && term == formula::Term::Body;
        self.params[part as usize][term as usize] == 0.0 && !crowding
    }
    fn crowding(&mut self, (v, v_ub): &(LinExpr, f64)) -> Option<LinExpr> {
        let (flag, q) = self.crowd?;
        // `flag * v` from below: exact at the optimum, where it only adds cost.
        let gated = self.b.gated_lower(
            v,
            &LinExpr::var(flag),
            *v_ub,
            &format!("crowded_body_{}", self.i),
        );
        Some(gated.scaled(OBJECTIVE_SCALE * q))
    }
    fn seconds(
        &mut self,
        part: formula::Part,
        term: formula::Term,
        (v, _): &(LinExpr, f64),
    ) -> LinExpr {
        v.scaled(OBJECTIVE_SCALE * self.params[part as usize][term as usize])
    }
    fn time_zero(&mut self) -> LinExpr {
        LinExpr::new()
    }
    fn time_add(&mut self, a: &LinExpr, b: &LinExpr) -> LinExpr {
        a.clone().plus(b, 1.0)
    }
    fn time_max(
        &mut self,
        fast: &LinExpr,
        slow: &LinExpr,
        term: formula::Term,
        name: &str,
    ) -> LinExpr {
        let name = format!("{}_{name}", term.name());
        let m = self.b.milp.add_var(&name, 0.0, f64::INFINITY, false);
        let mv = LinExpr::var(m);
        self.b
            .milp
            .add_relation(format!("{name}_fast"), &mv, Sense::Ge, fast);
        self.b
            .milp
            .add_relation(format!("{name}_slow"), &mv, Sense::Ge, slow);
        mv
    }
}

/// For array `a` read by stencil `i`: the latest stencil before `i` that reads or writes `a`.
fn previous_toucher(analysis: &Analysis, a: ArrayId, i: usize) -> Option<usize> {
    (0..i)
        .rev()
        .find(|&j| analysis.stencils[j].array == a || analysis.stencils[j].bounds.contains_key(&a))
}

/// For array `a` read by stencil `i`: the latest earlier stencil that reads it.
fn previous_reader(analysis: &Analysis, a: ArrayId, i: usize) -> Option<usize> {
    (0..i)
        .rev()
        .find(|&j| analysis.stencils[j].bounds.contains_key(&a))
}

impl Builder {
    /// Group indices `g_i` (integer, `g_0 = 0`) and cuts `cut_i = g_{i+1} - g_i` (binary, fixed
    /// by `--fix-groups`).
    fn group_variables(&mut self, n_st: usize, options: &MilpOptions) -> Vec<VarId> {
        let b = self;
        // Group indices and cuts.
        let mut group_index = Vec::new();
        for i in 0..n_st {
            let g = b.milp.add_var(format!("g_{i}"), 0.0, i as f64, true);
            group_index.push(g);
        }
        b.milp.vars[group_index[0].0].upper = 0.0;
        for i in 0..n_st.saturating_sub(1) {
            let (lo, hi) = match &options.fixed_groups {
                Some(g) => {
                    let c = (g[i + 1] != g[i]) as u8 as f64;
                    (c, c)
                }
                None => (0.0, 1.0),
            };
            let c = b.milp.add_var(format!("cut_{i}"), lo, hi, true);
            b.cuts.push(c);
            // g_{i+1} - g_i - cut_i = 0
            let mut e = LinExpr::var(group_index[i + 1]);
            e.add(group_index[i], -1.0).add(c, -1.0);
            b.milp
                .add_constraint(format!("group_step_{i}"), &e, Sense::Eq, 0.0);
        }

        group_index
    }

    /// Tile counts `n_i^d` as sums of binary digits, equal within a group.
    fn tile_variables(&mut self, n_st: usize) -> Vec<[VarId; 3]> {
        let b = self;
        let tile_range = b.tile_range;
        // Tile counts as binary digits; equal within a group.
        let mut tile_counts = Vec::new();
        for i in 0..n_st {
            let mut vars = [VarId(0); 3];
            let mut bits: [Vec<VarId>; 3] = Default::default();
            for d in 0..3 {
                let (lo, hi) = tile_range[d];
                let nbits = (usize::BITS - hi.leading_zeros()) as usize;
                for k in 0..nbits {
                    bits[d].push(b.milp.add_binary(format!("bit_{}{i}_{k}", DIMS[d])));
                }
                let v = b
                    .milp
                    .add_var(format!("n_{}{i}", DIMS[d]), lo as f64, hi as f64, true);
                let mut e = LinExpr::var(v);
                for (k, &bit) in bits[d].iter().enumerate() {
                    e.add(bit, -((1u64 << k) as f64));
                }
                b.milp
                    .add_constraint(format!("n_{}{i}_digits", DIMS[d]), &e, Sense::Eq, 0.0);
                vars[d] = v;
            }
            tile_counts.push(vars);
            b.bits.push(bits);
        }
        for i in 0..n_st.saturating_sub(1) {
            for d in 0..3 {
                let span = (tile_range[d].1 - tile_range[d].0) as f64;
                let mut diff = LinExpr::var(tile_counts[i + 1][d]);
                diff.add(tile_counts[i][d], -1.0);
                let bound = LinExpr::term(b.cuts[i], span);
                b.milp
                    .add_relation(format!("n_{}{i}_eq_up", DIMS[d]), &diff, Sense::Le, &bound);
                b.milp.add_relation(
                    format!("n_{}{i}_eq_down", DIMS[d]),
                    &diff.scaled(-1.0),
                    Sense::Le,
                    &bound,
                );
            }
        }

        tile_counts
    }

    /// Evaluation widths `e_i^{d±}`, last stencil first: the max over in-group readers of their
    /// width plus reach (exact where `exact_width` says so).
    fn width_expressions(
        &mut self,
        analysis: &Analysis,
        exact_width: &[bool],
    ) -> Vec<[[LinExpr; 2]; 3]> {
        let b = self;
        let n_st = analysis.stencils.len();
        // Evaluation widths e[i][d][side], last stencil first.
        let mut widths: Vec<[[LinExpr; 2]; 3]> = vec![Default::default(); n_st];
        for i in (0..n_st).rev() {
            let info = &analysis.stencils[i];
            for d in 0..3 {
                for side in 0..2 {
                    let ub = info.extent[d][side] as f64;
                    let readers: Vec<(usize, f64)> = info
                        .readers
                        .iter()
                        .map(|&r| {
                            let bd = analysis.stencils[r].bounds[&info.array][d];
                            let reach = if side == 0 { -bd.0 } else { bd.1 }.max(0) as f64;
                            (r, reach)
                        })
                        .collect();
                    if readers.is_empty() || ub == 0.0 {
                        widths[i][d][side] = LinExpr::new();
                        continue;
                    }
                    let sname = ["m", "p"][side];
                    let name = format!("e_{}{i}_{sname}", DIMS[d]);
                    let mut terms = Vec::new();
                    for &(r, reach) in &readers {
                        let t = widths[r][d][side]
                            .clone()
                            .plus(&LinExpr::constant(reach), 1.0);
                        let same = b.same(i, r);
                        terms.push((t, same));
                    }
                    let ev = switched_max(&mut b.milp, &terms, ub, exact_width[i], &name);
                    widths[i][d][side] = ev;
                }
            }
        }

        widths
    }

    /// Loads `ℓ_{i,a}` of stencil `i` (exact, from the "same group" tests), the running maxima
    /// of access extents per array and the load lines per dimension (the growth beyond what an
    /// earlier in-group reader loaded).
    fn loads_and_lines(
        &mut self,
        analysis: &Analysis,
        i: usize,
        widths: &[[[LinExpr; 2]; 3]],
        running: &mut Running,
    ) -> Loads {
        let b = self;
        let n_st = analysis.stencils.len();
        let info = &analysis.stencils[i];
        let mut load_sum = LinExpr::new();
        let mut load_flags = Vec::new();
        let mut lines: [LinExpr; 3] = Default::default();
        for (&a, bd) in &info.bounds {
            let producer = match analysis.arrays[a].kind {
                ArrayKind::Stencil(p) => Some(p),
                ArrayKind::Input => None,
            };
            let load = match previous_toucher(analysis, a, i) {
                Some(j) => LinExpr::constant(1.0).plus(&b.same(j, i), -1.0),
                None => LinExpr::constant(1.0),
            };
            load_sum.add_expr(&load, 1.0);
            load_flags.push(load.clone());
            let produced = match producer {
                Some(p) => b.same(p, i),
                None => LinExpr::new(),
            };
            let prev_reader = previous_reader(analysis, a, i);
            let has_later_reader =
                ((i + 1)..n_st).any(|k| analysis.stencils[k].bounds.contains_key(&a));
            let mut u_here: [[LinExpr; 2]; 3] = Default::default();
            for d in 0..3 {
                for side in 0..2 {
                    let reach = if side == 0 { -bd[d].0 } else { bd[d].1 }.max(0) as f64;
                    let alpha = widths[i][d][side]
                        .clone()
                        .plus(&LinExpr::constant(reach), 1.0);
                    let alpha_ub = b.upper(&alpha);
                    let tag = format!("{}{i}_{}_{}", DIMS[d], ["m", "p"][side], a);
                    // V = same(prev, i) * U_prev, exactly.
                    let (v, v_ub) = match prev_reader {
                        Some(j) => {
                            let u_prev = running[&(a, j)][d][side].clone();
                            let u_ub = b.upper(&u_prev);
                            let same = b.same(j, i);
                            let v = gated(&mut b.milp, &u_prev, &same, u_ub, &format!("v_{tag}"));
                            (v, u_ub)
                        }
                        None => (LinExpr::new(), 0.0),
                    };
                    // U = max(alpha, V), exactly, where a later reader will use it.
                    let u = if v_ub <= 0.0 {
                        alpha.clone()
                    } else if !has_later_reader {
                        LinExpr::new() // unused
                    } else {
                        let (u, record) = recorded_max(
                            &mut b.milp,
                            &alpha,
                            &v,
                            alpha_ub.max(v_ub),
                            &format!("u_{tag}"),
                        );
                        b.linearizations.push(record);
                        u
                    };
                    u_here[d][side] = u;
                    if alpha_ub <= 0.0 {
                        continue;
                    }
                    // lines >= alpha - V - ub * produced (the growth max(0, alpha - V), or the
                    // full access extent when V = 0; none when produced in the group).
                    let line = b.milp.add_var(format!("lines_{tag}"), 0.0, alpha_ub, false);
                    let rhs = alpha.clone().plus(&v, -1.0).plus(&produced, -alpha_ub);
                    b.milp.add_relation(
                        format!("lines_{tag}_ge"),
                        &LinExpr::var(line),
                        Sense::Ge,
                        &rhs,
                    );
                    lines[d].add(line, 1.0);
                }
            }
            running.insert((a, i), u_here);
        }

        Loads {
            sum: load_sum,
            flags: load_flags,
            lines,
        }
    }

    /// The base flag `m_i = [|L_i| + w_i > 0]` (exact) and the stream weight `|L_i| + w_i`.
    fn base_flag(&mut self, i: usize, loads: &Loads, store: &LinExpr) -> (LinExpr, LinExpr) {
        let b = self;
        let (load_sum, load_flags) = (&loads.sum, &loads.flags);
        let s_weight = load_sum
            .clone()
            .plus(store, STORE_WEIGHT as f64)
            .normalized();
        let base = if s_weight.terms.is_empty() {
            LinExpr::constant((s_weight.constant > 0.0) as u8 as f64)
        } else {
            let m = b.milp.add_var(format!("m_{i}"), 0.0, 1.0, false);
            let mv = LinExpr::var(m);
            for (k, f) in load_flags.iter().chain(std::iter::once(store)).enumerate() {
                b.milp
                    .add_relation(format!("m_{i}_ge_{k}"), &mv, Sense::Ge, f);
            }
            b.milp
                .add_relation(format!("m_{i}_le"), &mv, Sense::Le, &s_weight);
            mv
        };

        (s_weight, base)
    }

    /// Parallel efficiency: `N >= T` and `(1 - σ_T) T k <= N <= T k` for an integer `k`.
    fn parallel_rows(&mut self, i: usize, total: &LinExpr, machine: &ModelMachine) {
        let b = self;
        let threads = machine.threads as f64;
        let max_tiles: f64 = b.tile_range.iter().map(|r| r.1 as f64).product();
        b.milp
            .add_constraint(format!("threads_{i}"), total, Sense::Ge, threads);
        let k_max = (max_tiles / threads).ceil().max(1.0);
        let k = b.milp.add_var(format!("rounds_{i}"), 1.0, k_max, true);
        b.milp.add_relation(
            format!("rounds_{i}_le"),
            total,
            Sense::Le,
            &LinExpr::term(k, threads),
        );
        b.milp.add_relation(
            format!("rounds_{i}_ge"),
            &LinExpr::term(k, (1.0 - machine.slack.cores) * threads),
            Sense::Le,
            total,
        );
    }

    /// Even tiles: `D <= n t <= D / (1 - σ_D)` for an integer tile size `t`.
    fn even_tile_rows(&mut self, i: usize, dom: [usize; 3], machine: &ModelMachine) {
        let b = self;
        let tile_range = b.tile_range;
        let dom_f = dom.map(|d| d as f64);
        for d in 0..3 {
            let (lo, hi) = tile_range[d];
            let t_lo = dom[d].div_ceil(hi) as f64;
            let t_hi = dom[d].div_ceil(lo) as f64;
            let t = b
                .milp
                .add_var(format!("size_{}{i}", DIMS[d]), t_lo, t_hi, true);
            let nt = b.times_tiles(i, d, &LinExpr::var(t), t_hi, "nt");
            let max_cover = (dom_f[d] * (1.0 + 1e-9) / (1.0 - machine.slack.size)).floor();
            b.milp
                .add_constraint(format!("even_{}{i}_lo", DIMS[d]), &nt, Sense::Ge, dom_f[d]);
            b.milp
                .add_constraint(format!("even_{}{i}_hi", DIMS[d]), &nt, Sense::Le, max_cover);
        }
    }

    /// Stream flags `stream_i` (binary), equal within a group: `|stream_{i+1} - stream_i| <=
    /// cut_i`.
    fn stream_variables(&mut self, n_st: usize) -> Vec<VarId> {
        let b = self;
        let streams: Vec<VarId> = (0..n_st)
            .map(|i| b.milp.add_binary(format!("stream_{i}")))
            .collect();
        for i in 0..n_st.saturating_sub(1) {
            b.equal_unless_cut(&format!("stream_{i}"), streams[i + 1], streams[i], i);
        }
        streams
    }

    /// Cache: the arrays touched from the group's start to `i` are at most the machine's
    /// `group_arrays` in a program streamed along y, and times the cells per tile they fit the
    /// capacity: `count D^x D^y D^z <= C N` unless the group streams, `count W Π_{d<s} D^d <=
    /// C Π_{d<s} n^d` if it does (`cost::tile_cells`), each row switched off by a big-M of the
    /// stream flag. Returns the count, which the next stencil carries.
    #[allow(clippy::too_many_arguments)]
    fn cache_row(
        &mut self,
        analysis: &Analysis,
        machine: &ModelMachine,
        i: usize,
        total: &LinExpr,
        cross: &LinExpr,
        stream: VarId,
        mut count_prev: Option<LinExpr>,
    ) -> LinExpr {
        let b = self;
        let info = &analysis.stencils[i];
        let cells: f64 = analysis.domain.iter().map(|&d| d as f64).product();
        let capacity = cache_capacity(machine) as f64;
        let touched_here = analysis.touched(i).len() as f64;
        let mut count = LinExpr::constant(touched_here);
        for a in info.reads() {
            if let Some(j) = previous_toucher(analysis, a, i) {
                let s = b.same(j, i);
                count.add_expr(&s, -1.0);
            }
        }
        if let Some(prev) = count_prev.take() {
            let prev_ub = b.upper(&prev);
            let same_prev = b.same(i - 1, i);
            let carried = b.gated_lower(&prev, &same_prev, prev_ub, &format!("carried_{i}"));
            count.add_expr(&carried, 1.0);
        }
        let shape = stream_shape(analysis);
        let count_ub = b.upper(&count);
        // The machine's limit on the arrays a group walks, in programs streamed along y
        // (`cost::limits_arrays`): count <= group_arrays.
        if machine.group_arrays < usize::MAX && limits_arrays(shape) {
            b.milp.add_relation(
                format!("arrays_{i}"),
                &count,
                Sense::Le,
                &LinExpr::constant(machine.group_arrays as f64),
            );
        }
        // count * cells <= C * N + M stream
        let row = count.scaled(cells).plus(total, -capacity);
        b.milp.add_relation(
            format!("cache_{i}"),
            &row,
            Sense::Le,
            &LinExpr::term(stream, count_ub * cells),
        );
        // count * W * Π_{d<s} D^d <= C * N_cross + M (1 - stream)
        let stream_cells: f64 = shape.window as f64
            * analysis.domain[..shape.dim]
                .iter()
                .map(|&d| d as f64)
                .product::<f64>();
        let big = count_ub * stream_cells;
        let row = count.scaled(stream_cells).plus(cross, -capacity);
        b.milp.add_relation(
            format!("cache_stream_{i}"),
            &row,
            Sense::Le,
            &LinExpr::constant(big).plus(&LinExpr::var(stream), -big),
        );
        count
    }
}

/// Running maxima `U` of access extents per (array, reader), per dimension and side.
type Running = HashMap<(ArrayId, usize), [[LinExpr; 2]; 3]>;

/// What stencil `i` loads from slow memory.
struct Loads {
    /// `|L_i|`.
    sum: LinExpr,
    /// `ℓ_{i,a}` per array read.
    flags: Vec<LinExpr>,
    /// Load lines per dimension, both sides together.
    lines: [LinExpr; 3],
}

/// Which evaluation widths must be exact: those feeding a running maximum, and everything they
/// are bounded by (their readers' widths).
fn exact_widths(analysis: &Analysis) -> Vec<bool> {
    let n_st = analysis.stencils.len();
    let mut exact_width = vec![false; n_st];
    for i in 0..n_st {
        let feeds_max = analysis.stencils[i]
            .reads()
            .any(|a| ((i + 1)..n_st).any(|k| analysis.stencils[k].bounds.contains_key(&a)));
        exact_width[i] |= feeds_max;
    }
    for p in 0..n_st {
        if exact_width[p] {
            for &r in &analysis.stencils[p].readers.clone() {
                exact_width[r] = true;
            }
        }
    }

    exact_width
}

/// Builds the MILP of `analysis` on `machine`: group and tile variables, evaluation widths, then
/// per stencil its store and loads, weights, cost terms (`formula`) and the feasibility rows.
pub fn milp(analysis: &Analysis, machine: &ModelMachine, options: &MilpOptions) -> AbsintheMilp {
    crate::cost::debug_check_weights(analysis, &machine.params);
    let n_st = analysis.stencils.len();
    let dom = analysis.domain;
    let tile_range = options.tile_range(dom);
    let params = machine.params;

    let mut b = Builder {
        milp: Milp::new("absinthe"),
        cuts: Vec::new(),
        same_memo: HashMap::new(),
        bits: Vec::new(),
        linearizations: Vec::new(),
        tile_range,
    };
    let group_index = b.group_variables(n_st, options);
    let tile_counts = b.tile_variables(n_st);
    let streams = b.stream_variables(n_st);
    if options.stream_shape(analysis, machine).is_none() {
        for &v in &streams {
            b.milp.vars[v.0].upper = 0.0;
        }
    }
    // A streamed group spans whole rows (`cost::STREAM_TILES_X`): `n^x + (hi - X) stream <= hi`.
    let x_hi = b.tile_range[0].1;
    let whole = STREAM_TILES_X as f64;
    if (x_hi as f64) > whole {
        for (i, &st) in streams.iter().enumerate() {
            let mut row = b.tiles_expr(i, 0);
            row.add(st, x_hi as f64 - whole);
            b.milp
                .add_constraint(format!("stream_rows_{i}"), &row, Sense::Le, x_hi as f64);
        }
    }
    let shape = stream_shape(analysis);
    let widths = b.width_expressions(analysis, &exact_widths(analysis));

    let mut objective = LinExpr::new();
    let mut running: Running = HashMap::new();
    let mut count_prev: Option<LinExpr> = None;
    // Crowding (`cost::crowded`): charged when the machine has a charge and a limit.
    let crowding = params.crowded;
    let charges_crowding = crowding.stream_body > 0.0 && crowding.row_streams > 0;
    let mut crowded_flags: Vec<VarId> = Vec::new();
    let mut streams_prefix: Option<LinExpr> = None;
    for i in 0..n_st {
        let info = &analysis.stencils[i];
        let ext: [LinExpr; 3] =
            [0, 1, 2].map(|d| widths[i][d][0].clone().plus(&widths[i][d][1], 1.0));
        let ext_ub: [f64; 3] = [0, 1, 2].map(|d| b.upper(&ext[d]));

        // Store flag w_i: an output, or read after the group ends.
        let store = if info.is_output {
            LinExpr::constant(1.0)
        } else {
            let last = *info.readers.iter().max().unwrap_or(&i);
            LinExpr::constant(1.0).plus(&b.same(i, last), -1.0)
        };
        let loads = b.loads_and_lines(analysis, i, &widths, &mut running);
        let (s_weight, base) = b.base_flag(i, &loads, &store);
        let lines = &loads.lines;

        // Weights per dimension: m^d = m E^d, s^d = lines^d + w E^d.
        let mut base_d: [LinExpr; 3] = Default::default();
        let mut stream_d: [LinExpr; 3] = Default::default();
        for d in 0..3 {
            base_d[d] = b.gated_lower(&ext[d], &base, ext_ub[d], &format!("mE_{}{i}", DIMS[d]));
            let we = b.gated_lower(&ext[d], &store, ext_ub[d], &format!("wE_{}{i}", DIMS[d]));
            stream_d[d] = lines[d].clone().plus(&we, STORE_WEIGHT as f64);
        }

        // The cost of stencil i: `formula`'s counts and seconds over MILP expressions, every
        // product of a tile count with a bounded expression a binary-digit product (shared
        // when the same product appears twice); a part whose parameter is zero gets none.
        let c = info.fetch_weight as f64;
        let bounded = |b: &Builder, e: &LinExpr| (e.clone(), b.upper(e));
        let fast_w: [(LinExpr, f64); 4] = [
            (LinExpr::constant(c), c),
            (ext[0].scaled(c), c * ext_ub[0]),
            (ext[1].scaled(c), c * ext_ub[1]),
            (ext[2].scaled(c), c * ext_ub[2]),
        ];
        let f = info.operations as f64;
        let compute_w: [(LinExpr, f64); 4] = [
            (LinExpr::constant(f), f),
            (ext[0].scaled(f), f * ext_ub[0]),
            (ext[1].scaled(f), f * ext_ub[1]),
            (ext[2].scaled(f), f * ext_ub[2]),
        ];
        let base_w = [
            bounded(&b, &base),
            bounded(&b, &base_d[0]),
            bounded(&b, &base_d[1]),
            bounded(&b, &base_d[2]),
        ];
        let stream_w = [
            bounded(&b, &s_weight),
            bounded(&b, &stream_d[0]),
            bounded(&b, &stream_d[1]),
            bounded(&b, &stream_d[2]),
        ];
        let nz = b.tiles_expr(i, 2);
        let crowd = charges_crowding.then(|| {
            let (flag, prefix, whole) =
                b.crowded_flag(i, &s_weight, streams_prefix.as_ref(), &crowded_flags);
            crowded_flags.push(flag);
            streams_prefix = Some(prefix);
            (flag, whole)
        });
        let mut terms = MilpTerms {
            b: &mut b,
            i,
            params: params.table(),
            memo: HashMap::new(),
            crowd: crowd.map(|(flag, _)| (flag, crowding.stream_body)),
        };
        let dom_u = dom.map(|d| d as u128);
        let counts =
            formula::stencil_counts(&mut terms, dom_u, &[fast_w, base_w, stream_w, compute_w]);
        let t = formula::stencil_terms(&mut terms, &counts, &i.to_string());
        objective.add_expr(&t.peel, 1.0).add_expr(&t.body, 1.0);

        // Tile total N = n^x (n^y n^z), exactly, and its loop-bound overhead.
        let nz_count = (nz.clone(), tile_range[2].1 as f64);
        let nyz = formula::Algebra::times_tiles(&mut terms, 1, &nz_count);
        let total_count = formula::Algebra::times_tiles(&mut terms, 0, &nyz);
        let overhead = formula::overhead(&mut terms, &total_count, 1);
        objective.add_expr(&overhead, 1.0);
        if let (Some((flag, whole)), Some(prefix)) = (crowd, &streams_prefix) {
            terms.b.crowded_rows(
                i,
                dom,
                crowding.row_streams,
                (flag, prefix, whole),
                &nz,
                &nyz.0,
            );
        }
        let total = total_count.0;
        // The tile counts inside the stream dimension (`cost::tile_cells`): n^x n^y along z,
        // n^x along y.
        let cross = if shape.dim == 2 {
            let ny = (terms.b.tiles_expr(i, 1), tile_range[1].1 as f64);
            formula::Algebra::times_tiles(&mut terms, 0, &ny).0
        } else {
            terms.b.tiles_expr(i, 0)
        };

        b.parallel_rows(i, &total, machine);
        b.even_tile_rows(i, dom, machine);
        count_prev = Some(b.cache_row(
            analysis,
            machine,
            i,
            &total,
            &cross,
            streams[i],
            count_prev.take(),
        ));
    }

    b.milp.set_objective(&objective);
    AbsintheMilp {
        milp: b.milp,
        cuts: b.cuts,
        group_index,
        tile_counts,
        tile_bits: b.bits,
        streams,
        domain: dom,
        stream_shape: options.stream_shape(analysis, machine),
        linearizations: b.linearizations,
    }
}
