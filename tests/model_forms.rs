//! The forms of the model (`--model`): the published ABSINTHE model against an oracle written
//! here from its definition alone, and the CLI naming the form it prices with.

use absinthe_model::cost_model::evaluate::{evaluate, Configuration};
use absinthe_model::cost_model::forms::with_model;
use absinthe_model::formats::machine::ModelMachine;
use absinthe_model::formats::model_kind::ModelKind;
use absinthe_model::language::analysis::{Analysis, ArrayKind};
use absinthe_model::language::generate::{random_program, RandomShape};
use absinthe_model::support::rng::Rng;

use crate::common::{absinthe, analyse, random_machine, stderr, stdout};

/// The published model's cost of `config`, or None when a constraint fails: the definition of
/// ABSINTHE's six-parameter model (a store weighted like a load, no compute part), computed
/// here from the program's reads without the crate's cost code.
fn published_cost(a: &Analysis, m: &ModelMachine, config: &Configuration) -> Option<f64> {
    let n_st = a.stencils.len();
    let mut total = 0.0;
    let mut start = 0;
    while start < n_st {
        let g = config.groups[start];
        let end = (start..n_st)
            .find(|&i| config.groups[i] != g)
            .unwrap_or(n_st);
        let n = config.tiles[g];
        if !feasible(a, m, start..end, n) {
            return None;
        }
        total += (start..end)
            .map(|i| stencil_time(a, m, start..end, i, n))
            .sum::<f64>();
        let tiles = (n[0] * n[1] * n[2]) as f64;
        let p = &m.params;
        total += (end - start) as f64 * 6.0 * (p.slow_base.body + p.slow_stream.body) * tiles;
        start = end;
    }
    Some(total)
}

/// The least and greatest offset of `i`'s reads of array `arr` along `dim`.
fn bound(a: &Analysis, i: usize, arr: usize, dim: usize) -> Option<(i32, i32)> {
    let offs = a.stencils[i]
        .accesses
        .iter()
        .filter(|(x, _)| *x == arr)
        .map(|(_, o)| o[dim]);
    let v: Vec<i32> = offs.collect();
    Some((*v.iter().min()?, *v.iter().max()?))
}

/// Evaluation widths `[dim][minus, plus]` of every stencil of the group `range`.
fn widths(a: &Analysis, range: std::ops::Range<usize>) -> Vec<[[i64; 2]; 3]> {
    let mut e = vec![[[0i64; 2]; 3]; range.len()];
    for i in range.clone().rev() {
        for r in range.clone().filter(|&r| r > i) {
            let er = e[r - range.start];
            for (dim, w) in e[i - range.start].iter_mut().enumerate() {
                if let Some((lo, hi)) = bound(a, r, a.stencils[i].array, dim) {
                    w[0] = w[0].max(er[dim][0] + (-lo).max(0) as i64);
                    w[1] = w[1].max(er[dim][1] + hi.max(0) as i64);
                }
            }
        }
    }
    e
}

fn read_arrays(a: &Analysis, i: usize) -> Vec<usize> {
    let mut v: Vec<usize> = a.stencils[i].accesses.iter().map(|(x, _)| *x).collect();
    v.sort_unstable();
    v.dedup();
    v
}

fn stencil_time(
    a: &Analysis,
    m: &ModelMachine,
    range: std::ops::Range<usize>,
    i: usize,
    n: [usize; 3],
) -> f64 {
    let e = widths(a, range.clone());
    let ei = e[i - range.start];
    let ext = |dim: usize| (ei[dim][0] + ei[dim][1]) as f64;
    let produced_in_group =
        |arr: usize| matches!(a.arrays[arr].kind, ArrayKind::Stencil(p) if range.contains(&p));
    let alpha = |s: usize, arr: usize, dim: usize, side: usize| -> Option<i64> {
        let (lo, hi) = bound(a, s, arr, dim)?;
        let reach = if side == 0 { (-lo).max(0) } else { hi.max(0) } as i64;
        Some(e[s - range.start][dim][side] + reach)
    };
    let mut loads = 0.0;
    let mut lines = [0.0; 3];
    for arr in read_arrays(a, i) {
        if produced_in_group(arr) {
            continue;
        }
        let earlier: Vec<usize> = (range.start..i)
            .filter(|&j| read_arrays(a, j).contains(&arr))
            .collect();
        for (dim, l) in lines.iter_mut().enumerate() {
            for side in 0..2 {
                let mine = alpha(i, arr, dim, side).unwrap();
                let before = earlier
                    .iter()
                    .filter_map(|&j| alpha(j, arr, dim, side))
                    .max();
                *l += match before {
                    None => mine,
                    Some(b) => (mine - b).max(0),
                } as f64;
            }
        }
        if earlier.is_empty() {
            loads += 1.0;
        }
    }
    let info = &a.stencils[i];
    let store = (info.is_output || info.readers.iter().any(|r| !range.contains(r))) as u8 as f64;
    let s = loads + store;
    let base = (s > 0.0) as u8 as f64;
    let c = 1.0 + info.accesses.len() as f64;
    let fast = [c, c * ext(0), c * ext(1), c * ext(2)];
    let basew = [base, base * ext(0), base * ext(1), base * ext(2)];
    let stream = [
        s,
        lines[0] + store * ext(0),
        lines[1] + store * ext(1),
        lines[2] + store * ext(2),
    ];
    let [dx, dy, dz] = a.domain.map(|x| x as f64);
    let [nx, ny, nz] = n.map(|x| x as f64);
    let peel = |w: [f64; 4]| nx * (dy * dz * w[0] + dz * ny * w[2] + dy * nz * w[3]);
    let body = |w: [f64; 4]| {
        dx * dy * dz * w[0] + dy * dz * nx * w[1] + dx * dz * ny * w[2] + dx * dy * nz * w[3]
    };
    let p = &m.params;
    let peel_t = (p.fast.peel * peel(fast))
        .max(p.slow_base.peel * peel(basew) + p.slow_stream.peel * peel(stream));
    let body_t = (p.fast.body * body(fast))
        .max(p.slow_base.body * body(basew) + p.slow_stream.body * body(stream));
    peel_t + body_t
}

/// The cache, parallel-efficiency and even-tile constraints of the group `range` with tile
/// counts `n`.
fn feasible(a: &Analysis, m: &ModelMachine, range: std::ops::Range<usize>, n: [usize; 3]) -> bool {
    let tol = 1e-9;
    let mut touched: Vec<usize> = range.clone().map(|i| a.stencils[i].array).collect();
    for i in range.clone() {
        touched.extend(read_arrays(a, i));
    }
    touched.sort_unstable();
    touched.dedup();
    let tiles = n[0] * n[1] * n[2];
    let cells: usize = a.domain.iter().product();
    if (touched.len() * cells) as f64 > m.cache_values.floor() * tiles as f64 {
        return false;
    }
    let t = m.threads;
    let k = tiles.div_ceil(t);
    if tiles < t || (1.0 - m.slack.cores) * (t * k) as f64 > tiles as f64 * (1.0 + tol) {
        return false;
    }
    (0..3).all(|dim| {
        let size = a.domain[dim].div_ceil(n[dim]);
        (n[dim] * size) as f64 * (1.0 - m.slack.size) <= a.domain[dim] as f64 * (1.0 + tol)
    })
}

fn random_configuration(rng: &mut Rng, a: &Analysis) -> Configuration {
    let mut groups = vec![0];
    for _ in 1..a.stencils.len() {
        let last = *groups.last().unwrap();
        groups.push(last + rng.chance(40) as usize);
    }
    let tiles = (0..=*groups.last().unwrap())
        .map(|_| a.domain.map(|d| rng.range(1, d as i64) as usize))
        .collect();
    Configuration {
        groups,
        tiles,
        stream: Vec::new(),
    }
}

/// The random programs the forms are checked on: up to six stencils, domains up to 9, offsets
/// up to 2, rich expressions.
const FORM_SHAPE: RandomShape = RandomShape {
    min_stencils: 1,
    max_stencils: 6,
    min_domain: 1,
    max_domain: 9,
    max_offset: 2,
    rich_expressions: true,
};

/// With an exposed share θ, every term costs its `max` plus θ times the smaller of its fast and
/// slow sides: on random programs, machines and configurations, each stencil's peel and body
/// under θ against its sides under θ = 0, and the total against the sum of the differences.
#[test]
fn an_exposed_share_adds_its_part_of_each_smaller_side() {
    let shape = FORM_SHAPE;
    let mut checked = 0;
    for seed in 0..60u64 {
        let a = analyse(&random_program(seed, &shape));
        let mut rng = Rng::new(seed.wrapping_mul(7907) + 11);
        let mut plain = random_machine(&mut rng, a.domain.iter().product());
        plain.params.exposed = 0.0;
        for theta in [0.25, 1.0] {
            let mut m = plain;
            m.params.exposed = theta;
            for _ in 0..10 {
                let config = random_configuration(&mut rng, &a);
                let (base, cost) = (evaluate(&a, &plain, &config), evaluate(&a, &m, &config));
                if !base.is_feasible() {
                    continue;
                }
                let mut extra = 0.0;
                for (g0, g) in base.groups.iter().zip(&cost.groups) {
                    for (s0, s) in g0.stencils.iter().zip(&g.stencils) {
                        let peel = theta * s0.fast_peel.min(s0.slow_peel);
                        let body = theta * s0.fast_body.min(s0.slow_body);
                        let close = |x: f64, y: f64| (x - y).abs() <= 1e-12 * x.abs().max(1e-300);
                        assert!(close(s.peel, s0.peel + peel), "seed {seed}: {s0:?} {s:?}");
                        assert!(close(s.body, s0.body + body), "seed {seed}: {s0:?} {s:?}");
                        extra += peel + body;
                    }
                }
                let want = base.total + extra;
                assert!(
                    (cost.total - want).abs() <= 1e-9 * want.abs().max(1e-300),
                    "seed {seed}: {} against {want}",
                    cost.total
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 200, "{checked} feasible configurations");
}

/// `evaluate` under `--model absinthe` equals the published model computed independently, on
/// random programs, machines (crowding charges, compute parts and array limits included: the
/// form drops them) and configurations, feasibility included.
#[test]
fn the_absinthe_form_prices_as_the_published_model() {
    let shape = FORM_SHAPE;
    let (mut feasible, mut infeasible) = (0, 0);
    for seed in 0..60u64 {
        let text = random_program(seed, &shape);
        let a = analyse(&text);
        let mut rng = Rng::new(seed.wrapping_mul(104729) + 3);
        let cells = a.domain.iter().product::<usize>();
        let linear = random_machine(&mut rng, cells);
        let m = with_model(&linear, ModelKind::Absinthe).unwrap();
        for _ in 0..20 {
            let config = random_configuration(&mut rng, &a);
            let cost = evaluate(&a, &m, &config);
            match published_cost(&a, &m, &config) {
                Some(t) => {
                    assert!(
                        cost.is_feasible(),
                        "seed {seed}: {config:?} feasible by definition, not by evaluate\n{text}"
                    );
                    let scale = t.abs().max(1e-300);
                    assert!(
                        (cost.total - t).abs() <= 1e-9 * scale,
                        "seed {seed}: {config:?}: evaluate {:e}, the published model {t:e}\n{text}",
                        cost.total
                    );
                    feasible += 1;
                }
                None => {
                    assert!(
                        !cost.is_feasible(),
                        "seed {seed}: {config:?} infeasible by definition, not by evaluate\n{text}"
                    );
                    infeasible += 1;
                }
            }
        }
    }
    assert!(
        feasible >= 200 && infeasible >= 200,
        "{feasible} feasible, {infeasible} infeasible"
    );
}

/// `solve --model absinthe` names the form in its output and its solution file; `codegen`
/// with that file refuses another form; a GPU machine refuses the form.
#[test]
fn solve_names_the_form_and_solution_files_keep_it() {
    let dir = tempfile::tempdir().unwrap();
    let sol = dir.path().join("hdiff.solution.yaml");
    let sol_s = sol.to_str().unwrap();
    let o = absinthe(&[
        "solve",
        "configs/hdiff.yaml",
        "--model",
        "absinthe",
        "-o",
        sol_s,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("(absinthe model)"), "{}", stdout(&o));
    let text = std::fs::read_to_string(&sol).unwrap();
    assert!(text.contains("model: absinthe"), "{text}");
    let o = absinthe(&["solve", "configs/hdiff.yaml"]);
    assert!(stdout(&o).contains("(linear model)"), "{}", stdout(&o));
    // A file learned in the published form is priced with it unless --model says otherwise.
    let default =
        std::fs::read_to_string(crate::common::root().join("machines/default.yaml")).unwrap();
    let learned = dir.path().join("published.yaml");
    std::fs::write(
        &learned,
        format!("{default}learned:\n  at: \"2026-11-27T00:00:00Z\"\n  host: test\n  samples: 1\n  r2: {{fast: 0.5, slow: 0.5}}\n  model: absinthe\n"),
    )
    .unwrap();
    let learned_s = learned.to_str().unwrap();
    let o = absinthe(&["solve", "configs/hdiff.yaml", "--machine", learned_s]);
    assert!(stdout(&o).contains("(absinthe model)"), "{}", stdout(&o));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    let o = absinthe(&[
        "solve",
        "configs/hdiff.yaml",
        "--machine",
        learned_s,
        "--model",
        "linear",
    ]);
    assert!(stdout(&o).contains("(linear model)"), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("fitted for the absinthe model"),
        "{}",
        stderr(&o)
    );
    let out = dir.path().join("gen");
    let o = absinthe(&[
        "codegen",
        "configs/hdiff.yaml",
        "--solution",
        sol_s,
        "--model",
        "linear",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("priced with the absinthe model"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists(), "a refused codegen wrote {}", out.display());
    let o = absinthe(&[
        "solve",
        "configs/hdiff.yaml",
        "--model",
        "absinthe",
        "--machine",
        "machines/h100.yaml",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("`gpu:` section"), "{}", stderr(&o));
    let o = absinthe(&[
        "solve",
        "configs/hdiff.yaml",
        "--model",
        "absinthe",
        "--inline",
        "lap",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("inlines nothing"), "{}", stderr(&o));
}
