//! The fit against synthetic data from the model itself, the machine-file rewrite, the
//! accuracy statistics.

use absinthe_solvers::method::Backend;

const HIGHS: Backend = Backend::Highs;
use absinthe_model::cost_model::evaluate::Configuration;
use absinthe_model::formats::learned::{
    CacheCalibration, CrowdingCalibration, FitQuality, GroupArraysCalibration, KernelRefit, Learned,
};
use absinthe_model::formats::machine::OperationWeights;
use absinthe_model::formats::machine::{Compute, Crowded, Machine, Params, PeelBody};
use absinthe_model::support::rng::Rng;

use crate::calibrate::{choose, fractions_to_try, FractionResult, KEEP_TOLERANCE};
use crate::fit::{lad_fit, medians, Sample};
use crate::machine_file;
use crate::training::{self, Family};
use absinthe_measure::accuracy;
use absinthe_measure::accuracy::r_squared;

/// Samples of one family whose times come from `coefficients` through the model's counts
/// (the crowding column at the row-stream limit `limit`), with ±3% noise and 8% gross
/// outliers (2-4 times too slow).
fn synthetic(family: Family, coefficients: &[f64], limit: u64, seed: u64) -> Vec<Sample> {
    let mut rng = Rng::new(seed);
    let programs = training::programs([64, 32, 32]).unwrap();
    let mut samples = Vec::new();
    let mut configuration = 0;
    for p in programs.iter().filter(|p| p.family == family) {
        let arrays = training::arrays_touched(&p.analysis);
        for size in training::tile_sizes(arrays, 8, 2097152.0 / 3.0, 12, 64) {
            let n = training::tile_counts(size, p.analysis.domain);
            let counts = training::run_counts(&p.analysis, n).fit_counts(family, limit);
            let exact = crate::fit::predict(coefficients, &counts);
            for _ in 0..5 {
                let noise = 1.0 + (rng.range(-300, 300) as f64) * 1e-4;
                let outlier = if rng.chance(8) {
                    rng.range(2, 4) as f64
                } else {
                    1.0
                };
                samples.push(Sample {
                    configuration,
                    counts: counts.clone(),
                    seconds: exact * noise * outlier,
                });
            }
            configuration += 1;
        }
    }
    samples
}

fn highs() -> Box<dyn absinthe_solvers::Solver> {
    absinthe_solvers::by_name("highs").unwrap()
}

/// Every fitted parameter's share of the mean predicted time is within 3% of that time, and
/// the parameters `tight` are within 5% of their own value.
fn assert_recovered(samples: &[Sample], truth: &[f64], fitted: &[f64], tight: &[usize]) {
    assert!(fitted.iter().all(|&f| f >= 0.0), "{fitted:?}");
    let n = samples.len() as f64;
    let mean_time = samples
        .iter()
        .map(|s| crate::fit::predict(truth, &s.counts))
        .sum::<f64>()
        / n;
    for k in 0..truth.len() {
        let mean_count = samples.iter().map(|s| s.counts[k]).sum::<f64>() / n;
        let error = (fitted[k] - truth[k]).abs() * mean_count;
        assert!(
            error <= 0.03 * mean_time,
            "parameter {k}: fitted {fitted:?}, truth {truth:?}"
        );
    }
    for &k in tight {
        assert!(
            (fitted[k] - truth[k]).abs() <= 0.05 * truth[k],
            "parameter {k}: fitted {fitted:?}, truth {truth:?}"
        );
    }
}

#[test]
fn lad_recovers_fast_parameters_despite_noise_and_outliers() {
    // The compute parameters too: the heavy fast programs vary operations apart from accesses.
    let truth = [3.1e-9, 1.7e-10, 1.1e-10, 2.3e-11];
    let samples = synthetic(Family::Fast, &truth, 0, 1);
    let fitted = lad_fit(&samples, highs().as_ref()).unwrap();
    assert_recovered(&samples, &truth, &fitted, &[0, 1, 3]);
    assert!(r_squared(&medians(&samples, &fitted)) > 0.95);
}

#[test]
fn lad_recovers_slow_parameters_and_keeps_a_zero_parameter_at_zero() {
    // The slow base peel is zero, as in machines/default.yaml; crowded groups (above 128 row
    // streams) pay half the stream body again.
    let truth = [0.0, 4.0e-11, 5.0e-9, 3.0e-10, 1.5e-10];
    let samples = synthetic(Family::Slow, &truth, 128, 2);
    let crowded = samples.iter().filter(|s| s.counts[4] > 0.0).count();
    assert!(
        crowded > 0 && crowded < samples.len(),
        "the training tiles fall on both sides of the limit: {crowded} of {}",
        samples.len()
    );
    let fitted = lad_fit(&samples, highs().as_ref()).unwrap();
    assert_recovered(&samples, &truth, &fitted, &[2, 3, 4]);
}

/// One exact measurement of every training program (on a 64x32x32 domain) at each of `shapes`
/// tile shapes, timed by the model's counts with coefficients `truth_fast` and `truth_slow`
/// (the crowding column at `limit`).
fn exact_measurements(
    truth_fast: &[f64],
    truth_slow: &[f64],
    limit: u64,
    shapes: usize,
) -> Vec<crate::training_runs::Measurement> {
    let mut measurements = Vec::new();
    for p in &training::programs([64, 32, 32]).unwrap() {
        let arrays = training::arrays_touched(&p.analysis);
        for size in training::tile_sizes(arrays, 8, 2097152.0 / 3.0, shapes, 64) {
            let tiles = training::tile_counts(size, p.analysis.domain);
            let counts = training::run_counts(&p.analysis, tiles);
            let truth = match p.family {
                Family::Slow => truth_slow,
                Family::Fast => truth_fast,
            };
            measurements.push(crate::training_runs::Measurement {
                program: p.program.name.clone(),
                family: p.family,
                tile_size: size,
                tiles,
                streamed: false,
                repeat: 0,
                seconds: crate::fit::predict(truth, &counts.fit_counts(p.family, limit)),
                counts,
            });
        }
    }
    measurements
}

/// `fit_measurements` tries every limit of `CROWDING_LIMITS` and keeps one that puts the same
/// runs above it as the limit the times were made with, and the charge they were made with;
/// times made without a charge keep none.
#[test]
fn the_slow_fit_finds_the_crowding_limit_and_charge() {
    let truth_fast = [3.1e-9, 1.7e-10, 1.1e-10, 2.3e-11];
    for (limit, charge) in [(128, 1.5e-10), (512, 2.0e-10), (0, 0.0)] {
        let truth_slow = [2.0e-9, 0.0, 5.0e-9, 3.0e-10, charge];
        let measurements = exact_measurements(&truth_fast, &truth_slow, limit, 30);
        let r = crate::fit_measurements(measurements.clone(), HIGHS).unwrap();
        assert_eq!(r.crowding.limits, crate::CROWDING_LIMITS.to_vec());
        let kept = r.params.crowded;
        if charge == 0.0 {
            assert_eq!(kept.stream_body, 0.0, "{kept:?}");
            continue;
        }
        assert!(
            (kept.stream_body - charge).abs() <= 0.02 * charge,
            "{kept:?}"
        );
        for m in measurements.iter().filter(|m| m.family == Family::Slow) {
            assert_eq!(
                m.counts.crowded(kept.row_streams),
                m.counts.crowded(limit),
                "{kept:?} {:?}",
                m.tiles
            );
        }
    }
}

/// The published form's fit (`ModelKind::Absinthe`) recovers its six parameters from times
/// made by its own counts (a store weighted like a load), tries no crowding limit and writes
/// no compute part; the default form's fit of the same times does not recover them.
#[test]
fn the_published_form_fits_its_six_parameters() {
    use absinthe_model::formats::model_kind::ModelKind;
    let truth_fast = [3.1e-9, 1.7e-10, 0.0, 0.0];
    let truth_slow = [2.0e-9, 0.0, 5.0e-9, 3.0e-10, 0.0];
    let mut measurements = exact_measurements(&truth_fast, &truth_slow, 0, 30);
    for m in &mut measurements {
        let truth = match m.family {
            Family::Slow => &truth_slow[..],
            Family::Fast => &truth_fast[..],
        };
        let counts = m.counts.fit_counts_in(m.family, 0, ModelKind::Absinthe);
        m.seconds = crate::fit::predict(truth, &counts);
    }
    let published = fit_in(&measurements, ModelKind::Absinthe);
    assert_eq!(published.crowding.limits, vec![0]);
    let p = published.params;
    assert_eq!((p.compute.peel, p.compute.body), (0.0, 0.0));
    assert_eq!(p.crowded.stream_body, 0.0);
    let close = |x: f64, t: f64| (x - t).abs() <= 1e-6 * t.abs().max(1e-12);
    assert!(
        close(p.fast.peel, truth_fast[0]) && close(p.fast.body, truth_fast[1]),
        "{p:?}"
    );
    assert!(close(p.slow_base.peel, truth_slow[0]), "{p:?}");
    assert!(
        close(p.slow_stream.peel, truth_slow[2]) && close(p.slow_stream.body, truth_slow[3]),
        "{p:?}"
    );
    let linear = fit_in(&measurements, ModelKind::Linear).params;
    assert!(!close(linear.slow_stream.body, truth_slow[3]), "{linear:?}");
}

fn fit_in(
    measurements: &[crate::training_runs::Measurement],
    model: absinthe_model::formats::model_kind::ModelKind,
) -> crate::LearnResult {
    crate::fit_measurements_in(measurements.to_vec(), HIGHS, model).unwrap()
}

#[test]
fn lad_clamps_at_zero_where_least_squares_would_go_negative() {
    // Times fall as the first count grows: an unconstrained fit would make its coefficient
    // negative; the non-negative fit puts it at zero and explains the rest with the second.
    let samples: Vec<Sample> = (0..20)
        .map(|r| Sample {
            configuration: r,
            counts: vec![r as f64 * 1e6, 1e6],
            seconds: 1e-3 * (1.0 - r as f64 * 0.01),
        })
        .collect();
    let fitted = lad_fit(&samples, highs().as_ref()).unwrap();
    assert_eq!(fitted[0], 0.0);
    assert!(fitted[1] > 0.0);
}

const MACHINE: &str = "# Header comment: where these numbers come from.\n# Second line.\nname: test-box\n# cores comment\ncores: 2\ncache_fraction: 0.3333\nparams:\n  fast:        {peel: 1.0e-10, body: 1.0e-11}\n  slow_base:   {peel: 0.0,     body: 0.0}\n  slow_stream: {peel: 1.0e-9,  body: 1.0e-10}\ncompiler: {cxx: g++, flags: [-O3]}   # trailing comment\n";

fn learned() -> (Params, Learned) {
    let params = Params {
        fast: PeelBody {
            peel: 2.5e-9,
            body: 1.25e-10,
        },
        slow_base: PeelBody {
            peel: 0.0,
            body: 3.0e-11,
        },
        slow_stream: PeelBody {
            peel: 4.0e-9,
            body: 2.0e-10,
        },
        compute: Compute {
            peel: 4.0e-11,
            body: 1.5e-11,
        },
        crowded: Crowded {
            row_streams: 128,
            stream_body: 7.5e-11,
        },
        operations: OperationWeights {
            divide: 24,
            sqrt: 61,
            call: 250,
            divide_literals: false,
        },
        exposed: 0.0,
    };
    let learned = Learned {
        model: Default::default(),
        at: machine_file::utc_timestamp(1_795_000_000),
        host: "box (Some \"CPU\", 2 CPUs)".into(),
        samples: 1234,
        r2: FitQuality {
            fast: 0.93,
            slow: 0.91,
        },
        wall_seconds: Some(281.5),
        flush: Some(absinthe_model::formats::learned::FlushKind::Evict),
        flag_calibration: None,
        division_calibration: None,
        cache_calibration: Some(CacheCalibration {
            fractions: vec![0.25, 0.5, 1.0],
            seconds: vec![Some(5.25e-3), None, Some(4.5e-3)],
            rounds: vec![Some(vec![5.0e-3, 5.5e-3]), None, Some(vec![4.5e-3, 4.5e-3])],
        }),
        group_arrays_calibration: Some(GroupArraysCalibration {
            limits: vec![None, Some(12), Some(8)],
            seconds: vec![Some(3.0e-3), None, Some(2.5e-3)],
            rounds: vec![Some(vec![3.0e-3, 3.0e-3]), None, Some(vec![2.5e-3, 2.5e-3])],
        }),
        crowding_calibration: Some(CrowdingCalibration {
            limits: vec![0, 128, 256],
            deviations: vec![2.5e-2, 1.25e-2, 1.5e-2],
            r2_slow: vec![0.8125, 0.875, 0.8625],
        }),
        kernel_refit: Some(KernelRefit {
            programs: vec!["j3d7pt".into(), "example2".into()],
            variants: 18,
            weight: 2.0,
            rounds: 3,
            within_20_before: 0.3125,
            within_20_after: 0.625,
            spearman_before: 0.8125,
            spearman_after: 0.875,
            r2_synthetic_fit: FitQuality {
                fast: 0.9375,
                slow: 0.8125,
            },
        }),
    };
    (params, learned)
}

#[test]
fn rewrite_replaces_params_and_keeps_everything_else() {
    let (params, learned) = learned();
    let extra = [
        ("cores", "4".to_string()),
        ("cache_bytes", "2097152".to_string()),
    ];
    let text = machine_file::rewrite(MACHINE, &params, &learned, &extra).unwrap();
    let m = Machine::from_yaml(&text).unwrap();
    assert_eq!(m.params, Some(params));
    assert_eq!(m.learned, Some(learned.clone()));
    assert_eq!(m.cores, Some(2), "an existing key is not overwritten");
    assert_eq!(m.cache_bytes, Some(2097152), "a missing key is added");
    for kept in [
        "# Header comment: where these numbers come from.\n# Second line.\nname: test-box\n# cores comment\ncores: 2\n",
        "compiler: {cxx: g++, flags: [-O3]}   # trailing comment\n",
    ] {
        assert!(text.contains(kept), "lost {kept:?}:\n{text}");
    }
    assert!(!text.contains("1.0e-9"), "old params remain:\n{text}");
    // Rewriting again replaces the learned block instead of adding a second one.
    let again = machine_file::rewrite(&text, &params, &learned, &extra).unwrap();
    assert_eq!(again, text);
}

#[test]
fn rewrite_appends_to_a_file_without_params() {
    let (params, learned) = learned();
    let text = machine_file::rewrite(
        "# only a name\nname: bare\n",
        &params,
        &learned,
        &[("cores", "2".into())],
    )
    .unwrap();
    assert!(
        text.starts_with("# only a name\nname: bare\ncores: 2\nparams:\n"),
        "{text}"
    );
    assert_eq!(Machine::from_yaml(&text).unwrap().params, Some(params));
}

#[test]
fn timestamps_are_utc_dates() {
    assert_eq!(machine_file::utc_timestamp(0), "1970-01-01T00:00:00Z");
    assert_eq!(
        machine_file::utc_timestamp(951_782_400),
        "2000-02-29T00:00:00Z"
    );
    assert_eq!(
        machine_file::utc_timestamp(1_795_000_000),
        "2026-11-18T11:06:40Z"
    );
}

#[test]
fn spearman_and_summary() {
    assert!(
        (accuracy::spearman(&[1.0, 2.0, 3.0, 4.0], &[10.0, 20.0, 30.0, 40.0]) - 1.0).abs() < 1e-12
    );
    assert!((accuracy::spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]) + 1.0).abs() < 1e-12);
    // Ties share a rank.
    assert!((accuracy::spearman(&[1.0, 1.0, 2.0], &[1.0, 1.0, 2.0]) - 1.0).abs() < 1e-12);
    let points: Vec<accuracy::Point> = [(1.0, 1.1), (2.0, 2.9), (3.0, 3.0)]
        .iter()
        .map(|&(p, m)| accuracy::Point {
            label: String::new(),
            predicted: p,
            measured: m,
            optimum: false,
        })
        .collect();
    let s = accuracy::summarize(&points);
    assert_eq!(s.variants, 3);
    assert!((s.within_20_percent - 2.0 / 3.0).abs() < 1e-12);
    assert!((s.spearman - 1.0).abs() < 1e-12);
}

/// The original work's auto-tuning grid on 64x64x60: tile sizes 1..64 (powers of two) along x
/// and y, 1, 2, 4, 12, 30, 60 along z, as tile counts.
#[test]
fn autotune_grid_is_the_original_works() {
    use absinthe_measure::variants::{autotune_tilings, parse_variants, Variant};
    let t = autotune_tilings([64, 64, 60]);
    assert_eq!(t.len(), 7 * 7 * 6);
    assert_eq!(t[0], [64, 64, 60]);
    assert_eq!(*t.last().unwrap(), [1, 1, 1]);
    let zs: Vec<usize> = t.iter().take(6).map(|c| c[2]).collect();
    assert_eq!(zs, vec![60, 30, 15, 5, 2, 1]);
    // Sizes that give the same count appear once: along 10, sizes 1, 2, 4, 8 and 10 give
    // counts 10, 5, 3, 2, 1.
    let small = autotune_tilings([10, 1, 3]);
    let xs: Vec<usize> = small
        .iter()
        .map(|c| c[0])
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(xs, vec![1, 2, 3, 5, 10]);
    assert_eq!(small.len(), 15);
    assert_eq!(
        parse_variants("opt,autotune").unwrap(),
        vec![Variant::Opt, Variant::Autotune]
    );
}

#[test]
fn top_k_variants_parse() {
    use absinthe_measure::variants::{parse_variants, Variant};
    assert_eq!(
        parse_variants("top:8,opt").unwrap(),
        vec![Variant::Top(8), Variant::Opt]
    );
    for bad in ["top:0", "top:", "top:x"] {
        let e = parse_variants(bad).unwrap_err();
        assert!(e.contains("top:K"), "{bad}: {e}");
    }
    // An empty entry is not dropped: `groups:0,,0,0` is not `groups:0,0,0`.
    for bad in ["groups:0,,0,0", "opt,", ",opt"] {
        let e = parse_variants(bad).unwrap_err();
        assert!(e.contains("empty entry"), "{bad}: {e}");
    }
}

/// The shapes of the slow family on the default domain: the even spread of the grid plus full
/// rows (one tile along x, as the optima take; the largest faces and the tallest one and two
/// planes deep), every one within the cache and at least
/// `MIN_TILE_VOLUME` cells, the full-row ones the largest faces that fit.
#[test]
fn tile_sizes_include_full_rows_that_fit() {
    let programs = training::programs(training::DOMAIN).unwrap();
    let capacity = 1048576.0 / 3.0;
    for p in &programs {
        let arrays = training::arrays_touched(&p.analysis);
        let sizes = training::tile_sizes(arrays, 8, capacity, 20, training::DOMAIN[0]);
        let full: Vec<&[usize; 3]> = sizes
            .iter()
            .filter(|s| s[0] == training::DOMAIN[0])
            .collect();
        assert!(
            !full.is_empty() && full.len() <= training::most_full_row_shapes(20),
            "{}: {sizes:?}",
            p.program.name
        );
        // The shallow ones: one tile along x, one and two planes deep.
        for z in training::SHALLOW_DEPTHS {
            assert!(
                full.iter().any(|s| s[2] == z),
                "{}: no full-row shape {z} deep in {sizes:?}",
                p.program.name
            );
        }
        for s in &sizes {
            let cells = s[0] * s[1] * s[2];
            assert!(cells >= training::MIN_TILE_VOLUME, "{s:?}");
            assert!((cells * arrays * 8) as f64 <= capacity, "{s:?}");
        }
        for s in &full {
            assert_eq!(training::tile_counts(**s, training::DOMAIN)[0], 1);
            // The next height of the grid does not fit at the same depth.
            let grid = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 40, 48, 55];
            if let Some(&y) = grid.iter().find(|&&y| y > s[1]) {
                let cells = s[0] * y * s[2];
                assert!(
                    (cells * arrays * 8) as f64 > capacity,
                    "{s:?} is not the largest face"
                );
            }
        }
    }
    // Without a domain wider than the grid's longest row, or with a tiny budget, nothing is added.
    assert_eq!(training::full_row_shapes(20), training::FULL_ROW_SHAPES);
    assert_eq!(training::tile_sizes(3, 8, capacity, 2, 128).len(), 2);
    assert_eq!(
        training::tile_sizes(3, 8, capacity, 20, 80),
        training::tile_sizes(3, 8, capacity, 20, 0)
    );
}

/// The streamed shapes of every slow program on the default domain: whole rows (whole planes
/// when streaming along z), at least two tiles, and feasible under the model itself
/// (`group_infeasibility` with the streamed cache test), the largest tiles first; none for a
/// tiny budget, at most `STREAMED_SHAPES`. The programs that stream along y have some; along
/// z, no whole plane's window fits a third of 1 MiB.
#[test]
fn streamed_sizes_are_feasible_contiguous_faces() {
    use absinthe_model::cost_model::evaluate::{group_infeasibility, stream_shape};
    let programs = training::programs(training::DOMAIN).unwrap();
    let capacity = 1048576.0 / 3.0;
    let mut machine = training::lowering_machine(2);
    machine.cache_values = capacity / 8.0;
    let mut along_y = 0;
    for p in programs.iter().filter(|p| p.family == Family::Slow) {
        let sizes = training::streamed_sizes(&p.analysis, 8, capacity, 20, 2);
        let dim = stream_shape(&p.analysis).dim;
        if dim == 1 {
            along_y += 1;
            assert!(!sizes.is_empty(), "{}", p.program.name);
        }
        assert!(
            sizes.len() <= training::STREAMED_SHAPES,
            "{}: {sizes:?}",
            p.program.name
        );
        let mut last = usize::MAX;
        for s in &sizes {
            let n = training::tile_counts(*s, training::DOMAIN);
            assert_eq!(n[0], 1, "{}: {s:?}", p.program.name);
            assert!(dim == 1 || n[1] == 1, "{}: {s:?}", p.program.name);
            assert!(n[1] * n[2] >= 2);
            let range = 0..p.analysis.stencils.len();
            let why = group_infeasibility(&p.analysis, &machine, 0, range.clone(), n, true);
            assert!(why.is_none(), "{} at {n:?}: {why:?}", p.program.name);
            // Not streamed, the same tile overflows the cache: these are new to the fit.
            assert!(group_infeasibility(&p.analysis, &machine, 0, range, n, false).is_some());
            let cells = s[0] * s[1] * s[2];
            assert!(cells <= last, "{sizes:?}: largest first");
            last = cells;
        }
        assert!(training::streamed_sizes(&p.analysis, 8, capacity, 2, 2).is_empty());
    }
    assert_eq!(
        along_y, 3,
        "the three slow programs of width 0 stream along y"
    );
}

/// learn's slow fit holds the base body at zero (`SLOW_FIT_HELD_AT_ZERO`): measurements
/// generated with a base body of 4e-11 s per cell are fitted with none, the stream terms take
/// its time, and the fast family's columns are untouched.
#[test]
fn the_slow_fit_holds_the_base_body_at_zero() {
    let truth_slow = [0.0, 4.0e-11, 5.0e-9, 3.0e-10, 0.0];
    let truth_fast = [3.1e-9, 1.7e-10, 1.1e-10, 2.3e-11];
    let measurements = exact_measurements(&truth_fast, &truth_slow, 0, 12);
    let slow = crate::samples(&measurements, Family::Slow, 0);
    assert!(slow
        .iter()
        .all(|s| s.counts[crate::SLOW_FIT_HELD_AT_ZERO] == 0.0));
    assert!(slow.iter().all(|s| s.counts[3] > 0.0));
    let fast = crate::samples(&measurements, Family::Fast, 0);
    assert!(fast.iter().all(|s| s.counts.iter().all(|&c| c > 0.0)));
    let r = crate::fit_measurements(measurements, HIGHS).unwrap();
    assert_eq!(r.params.slow_base.body, 0.0);
    assert!(r.params.slow_stream.body > truth_slow[3], "{:?}", r.params);
}

/// A calibration row: `fraction` measured `rounds` (each round's geometric mean) or nothing.
fn row(fraction: f64, rounds: Option<&[f64]>) -> FractionResult {
    let seconds = rounds.map(|r| r.iter().product::<f64>().powf(1.0 / r.len() as f64));
    FractionResult {
        fraction,
        per_program: vec![seconds.map(|s| (0, s))],
        seconds,
        rounds: rounds.map(<[f64]>::to_vec),
    }
}

#[test]
fn the_files_own_cache_fraction_is_kept_unless_it_ran_slower_round_by_round() {
    let third = 1.0 / 3.0;
    // The file's own is slower in every round: the fastest wins.
    let rows = [
        row(0.25, Some(&[5.2, 5.3, 5.1, 5.2])),
        row(third, Some(&[5.1, 5.2, 5.0, 5.1])),
        row(0.75, Some(&[4.4, 4.5, 4.3, 4.4])),
    ];
    assert_eq!(choose(&rows, third), 0.75);
    // Faster by more at its mean, but not round by round (the machine moved): kept.
    let noisy = [
        row(third, Some(&[5.0, 4.0, 5.0, 4.0])),
        row(0.75, Some(&[4.0, 5.0, 3.0, 4.2])),
    ];
    assert_eq!(choose(&noisy, third), third);
    // Slower in every round, but by less than the tolerance: kept.
    let close = 1.0 + KEEP_TOLERANCE * 0.9;
    let near = [
        row(third, Some(&[close, 2.0 * close, close])),
        row(1.0, Some(&[1.0, 2.0, 1.0])),
    ];
    assert_eq!(choose(&near, third), third);
    // Just beyond the tolerance in every round, with the rounds moving together: replaced.
    let past = 1.0 + KEEP_TOLERANCE * 1.1;
    let beyond = [
        row(third, Some(&[past, 2.0 * past, 1.5 * past])),
        row(1.0, Some(&[1.0, 2.0, 1.5])),
    ];
    assert_eq!(choose(&beyond, third), 1.0);
    // Of the fractions that tie with the fastest, the one nearest the file's own; exact ties
    // (the same configurations) included.
    let ties = [
        row(third, Some(&[6.0, 6.1, 5.9, 6.0])),
        row(0.5, Some(&[4.5, 4.4, 4.6, 4.5])),
        row(0.75, Some(&[4.4, 4.6, 4.5, 4.4])),
        row(1.0, Some(&[4.4, 4.6, 4.5, 4.4])),
    ];
    assert_eq!(choose(&ties, third), 0.5);
    assert_eq!(choose(&ties, 0.9), 1.0);
    // A tie that ran slower than the fastest with confidence is not one.
    let slow_half = [
        row(third, Some(&[6.0, 6.1, 5.9, 6.0])),
        row(0.5, Some(&[5.0, 5.1, 5.0, 5.05])),
        row(1.0, Some(&[4.4, 4.6, 4.5, 4.4])),
    ];
    assert_eq!(choose(&slow_half, third), 1.0);
    // Infeasible fractions are skipped; with nothing measured the file's own stays.
    let some = [
        row(0.25, None),
        row(third, Some(&[2.0, 2.1])),
        row(1.0, Some(&[1.5, 1.5])),
    ];
    assert_eq!(choose(&some, third), 1.0);
    assert_eq!(choose(&[row(0.25, None)], 0.4), 0.4);
}

/// A calibration's times are taken per round, program and case: two rounds of two programs,
/// the second round twice as slow, each setting's optima at its own cases.
#[test]
fn calibration_times_are_taken_round_by_round_at_each_settings_cases() {
    use crate::calibrate::setting_times;
    // timed[round][program][case].
    let timed = vec![
        vec![vec![1.0, 4.0], vec![9.0, 16.0]],
        vec![vec![2.0, 8.0], vec![18.0, 32.0]],
    ];
    // Setting 0: case 0 of both programs; setting 1: case 1 of program 0, none of program 1.
    let cases_of = vec![vec![Some(0), Some(1)], vec![Some(0), None]];
    let (per_program, seconds, rounds) = setting_times(&timed, &cases_of, 0);
    assert_eq!(per_program, vec![Some((0, 1.5)), Some((0, 13.5))]);
    let rounds = rounds.unwrap();
    assert!(
        (rounds[0] - 3.0).abs() < 1e-12 && (rounds[1] - 6.0).abs() < 1e-12,
        "{rounds:?}"
    );
    assert!((seconds.unwrap() - 18f64.sqrt()).abs() < 1e-12);
    let (per_program, seconds, rounds) = setting_times(&timed, &cases_of, 1);
    assert_eq!(per_program, vec![Some((1, 6.0)), None]);
    assert_eq!((seconds, rounds), (None, None));
}

#[test]
fn the_files_own_fraction_is_tried_beside_the_fixed_ones() {
    assert_eq!(
        fractions_to_try(0.3333),
        vec![0.25, 1.0 / 3.0, 0.5, 0.75, 1.0]
    );
    assert_eq!(
        fractions_to_try(0.4),
        vec![0.25, 1.0 / 3.0, 0.4, 0.5, 0.75, 1.0]
    );
}

#[test]
fn set_top_level_replaces_one_key_and_keeps_the_rest() {
    let text = "# head\nname: a\ncache_fraction: 0.3333   # the share of L2\nslack:\n  cores: 0.05\ncompiler: {cxx: g++}\n";
    let set = machine_file::set_top_level(text, "cache_fraction", "0.7500");
    assert_eq!(
        set,
        "# head\nname: a\ncache_fraction: 0.7500  # the share of L2\nslack:\n  cores: 0.05\ncompiler: {cxx: g++}\n"
    );
    // A block key is replaced whole; a missing key is added at the end.
    let set = machine_file::set_top_level(text, "slack", "{cores: 0.1, size: 0.0}");
    assert!(
        set.contains("slack: {cores: 0.1, size: 0.0}\ncompiler:"),
        "{set}"
    );
    assert!(!set.contains("  cores: 0.05"), "{set}");
    let added = machine_file::set_top_level("name: a\n", "cache_fraction", "1.0000");
    assert_eq!(added, "name: a\ncache_fraction: 1.0000\n");
}

/// The calibration programs parse, need no more halo than they declare, and touch many arrays
/// (their inputs, every stencil's two own arrays and the stencils themselves).
#[test]
fn calibration_programs_are_wide_chains() {
    for stencils in [1, 3, 6, 9] {
        let text = training::wide_program(stencils, [40, 24, 16]);
        let p = absinthe_model::language::program::Program::from_yaml(&text)
            .unwrap_or_else(|d| panic!("{d:?}\n{text}"));
        let a = absinthe_model::Analysis::new(&p).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
        assert_eq!(a.stencils.len(), stencils);
        assert_eq!(training::arrays_touched(&a), 1 + 3 * stencils, "{text}");
    }
    let programs = training::wide_programs(&crate::calibrate::CALIBRATION_DOMAINS).unwrap();
    assert_eq!(programs.len(), 2);
    assert!(programs.iter().all(|p| p.family == Family::Slow));
}

/// A group-arrays calibration row: `limit` measured `rounds` (each round's geometric mean)
/// or nothing.
fn limit_row(limit: Option<usize>, rounds: Option<&[f64]>) -> crate::calibrate::LimitResult {
    let seconds = rounds.map(|r| r.iter().product::<f64>().powf(1.0 / r.len() as f64));
    crate::calibrate::LimitResult {
        limit,
        per_program: vec![seconds.map(|s| (0, s))],
        seconds,
        rounds: rounds.map(<[f64]>::to_vec),
    }
}

#[test]
fn the_files_own_group_arrays_limit_is_kept_unless_it_ran_slower_round_by_round() {
    use crate::calibrate::choose_limit;
    // No limit is slower in every round; 8 arrays fastest, and 6 slower than it.
    let rows = [
        limit_row(None, Some(&[1.0, 1.02, 0.98])),
        limit_row(Some(12), Some(&[0.9, 0.91, 0.89])),
        limit_row(Some(8), Some(&[0.8, 0.79, 0.81])),
        limit_row(Some(6), Some(&[0.86, 0.87, 0.88])),
    ];
    assert_eq!(choose_limit(&rows, None), Some(8));
    // The file's own within the tolerance stays (no limit too); else the nearest tie.
    let close = 1.0 + KEEP_TOLERANCE * 0.9;
    let near = [
        limit_row(None, Some(&[close, close])),
        limit_row(Some(16), Some(&[1.5, 1.5])),
        limit_row(Some(8), Some(&[1.0, 1.0])),
    ];
    assert_eq!(choose_limit(&near, None), None);
    assert_eq!(choose_limit(&near, Some(16)), Some(8));
    // Ties (the same optima): no limit nearest no limit, then the largest; else by ratio.
    let tied = [
        limit_row(None, Some(&[1.0, 1.0])),
        limit_row(Some(16), Some(&[1.0, 1.0])),
        limit_row(Some(8), Some(&[2.0, 2.0])),
    ];
    assert_eq!(choose_limit(&tied, Some(8)), Some(16));
    let tied = [
        limit_row(None, Some(&[2.0, 2.0])),
        limit_row(Some(16), Some(&[1.0, 1.0])),
        limit_row(Some(12), Some(&[1.0, 1.0])),
    ];
    assert_eq!(choose_limit(&tied, None), Some(16));
    assert_eq!(choose_limit(&tied, Some(10)), Some(12));
    // Nothing measured: the file's own.
    assert_eq!(
        choose_limit(&[limit_row(Some(6), None)], Some(10)),
        Some(10)
    );
}

#[test]
fn group_arrays_limits_tried_start_with_none_then_the_largest() {
    use crate::calibrate::limits_to_try;
    let fixed = vec![None, Some(16), Some(12), Some(10), Some(8), Some(6)];
    assert_eq!(limits_to_try(None), fixed);
    assert_eq!(limits_to_try(Some(8)), fixed);
    assert_eq!(
        limits_to_try(Some(9)),
        vec![
            None,
            Some(16),
            Some(12),
            Some(10),
            Some(9),
            Some(8),
            Some(6)
        ]
    );
}

#[test]
fn remove_top_level_drops_one_key_and_keeps_the_rest() {
    let text = "# head\nname: a\ngroup_arrays: 8  # learned\nslack:\n  cores: 0.05\n";
    assert_eq!(
        machine_file::remove_top_level(text, "group_arrays"),
        "# head\nname: a\nslack:\n  cores: 0.05\n"
    );
    assert_eq!(
        machine_file::remove_top_level(text, "slack"),
        "# head\nname: a\ngroup_arrays: 8  # learned\n"
    );
    assert_eq!(machine_file::remove_top_level(text, "cores"), text);
}

/// The fields programs parse, fit their halo, and a group of all fields touches 3 arrays per
/// field and the shared coefficient.
#[test]
fn fields_programs_share_one_coefficient() {
    for fields in [1, 2, 4] {
        let text = training::fields_program(fields, [40, 24, 16]);
        let p = absinthe_model::language::program::Program::from_yaml(&text)
            .unwrap_or_else(|d| panic!("{d:?}\n{text}"));
        let a = absinthe_model::Analysis::new(&p).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
        assert_eq!(a.stencils.len(), 2 * fields);
        assert_eq!(a.inputs.len(), fields + 1, "{text}");
        assert_eq!(training::arrays_touched(&a), 1 + 3 * fields, "{text}");
    }
    let programs = training::fields_programs(&crate::calibrate::CALIBRATION_DOMAINS).unwrap();
    assert_eq!(programs.len(), 2);
}

/// `top:K` takes one of each tie: same groups, same streamed groups, predictions within
/// `TIE`; a different grouping, stream set or a prediction beyond the tie is kept.
#[test]
fn top_k_skips_ties_of_configurations_already_taken() {
    use absinthe_measure::variants::{distinct_best, TIE};
    use absinthe_model::cost_model::evaluate::Configuration;
    let config = |groups: Vec<usize>, tiles: Vec<[usize; 3]>, stream: Vec<usize>| {
        let mut c = Configuration::new(groups, tiles);
        c.stream = stream;
        c
    };
    let one = |nz: usize, stream: Vec<usize>| config(vec![0, 0], vec![[1, 1, nz]], stream);
    let ranked = vec![
        (one(2, vec![0]), 1.0),
        (one(4, vec![0]), 1.0 + 0.5 * TIE),
        (one(6, vec![0]), 1.0 + TIE),
        (one(60, vec![]), 1.0 + TIE),
        (
            config(vec![0, 1], vec![[1, 1, 2]; 2], vec![0, 1]),
            1.0 + TIE,
        ),
        (one(8, vec![0]), 1.0 + 3.0 * TIE),
        (one(10, vec![0]), 1.0 + 3.5 * TIE),
    ];
    let taken = distinct_best(ranked.clone(), 8);
    let tiles: Vec<usize> = taken.iter().map(|(c, _)| c.tiles[0][2]).collect();
    assert_eq!(tiles, vec![2, 60, 2, 8], "{taken:?}");
    assert_eq!(taken[2].0.groups, vec![0, 1]);
    // At most k, cheapest first.
    assert_eq!(distinct_best(ranked, 2).len(), 2);
}

/// A machine holding `params` (4 MiB of cache, 2 cores), viewed for 8-byte values.
fn view_with(params: Params) -> absinthe_model::formats::machine::ModelMachine {
    let text = "name: kernels\ncores: 2\ncache_bytes: 4194304\ncache_fraction: 0.5\n";
    let machine = Machine {
        params: Some(params),
        ..Machine::from_yaml(text).unwrap()
    };
    machine.model_view(8).unwrap()
}

/// Refit parameters: the base body zero (as learn holds it), every group above 256 row
/// streams crowded.
fn refit_truth() -> Params {
    Params {
        fast: PeelBody {
            peel: 1.2e-10,
            body: 2.0e-11,
        },
        slow_base: PeelBody {
            peel: 4.0e-10,
            body: 0.0,
        },
        slow_stream: PeelBody {
            peel: 2.0e-10,
            body: 1.8e-10,
        },
        compute: Compute {
            peel: 1.5e-11,
            body: 7.0e-12,
        },
        crowded: Crowded {
            row_streams: 256,
            stream_body: 1.2e-10,
        },
        operations: OperationWeights::default(),
        exposed: 0.0,
    }
}

/// Every kernel at its unfused and its fully fused tiling over a few tile counts (those the
/// model finds feasible), as kernel rows with the model's cost under `params`: (row, the
/// model's total).
fn kernel_rows(params: Params) -> Vec<(crate::kernels::KernelRow, f64)> {
    use crate::kernels::{kernel_programs, KernelRow};
    let view = view_with(params);
    let mut rows = Vec::new();
    for (program, analysis) in kernel_programs().unwrap() {
        let n = analysis.stencils.len();
        for tiles in [[1, 1, 2], [2, 4, 4], [4, 16, 1], [1, 8, 30]] {
            for groups in [(0..n).collect::<Vec<_>>(), vec![0; n]] {
                let ngroups = groups.iter().max().map_or(0, |g| g + 1);
                let config = Configuration::new(groups, vec![tiles; ngroups]);
                let cost =
                    absinthe_model::cost_model::evaluate::evaluate(&analysis, &view, &config);
                if cost.infeasible.is_some() {
                    continue;
                }
                let name = format!("{tiles:?}");
                rows.push((KernelRow::of(&program.name, &name, &cost), cost.total));
            }
        }
    }
    rows
}

/// The refit's prediction of a kernel variant is the model's own total, and with the base body
/// at zero its columns times the parameters give the same number: the LP fits the model, with
/// and without an exposed share.
#[test]
fn kernel_rows_predict_what_the_model_evaluates() {
    for exposed in [0.0, 0.25] {
        kernel_rows_predict_what_the_model_evaluates_at(exposed);
    }
}

fn kernel_rows_predict_what_the_model_evaluates_at(exposed: f64) {
    use crate::kernels::{columns, kernel_columns, kernel_prediction};
    let params = Params {
        exposed,
        ..refit_truth()
    };
    let rows = kernel_rows(params);
    assert!(rows.len() >= 16, "{} feasible rows", rows.len());
    assert!(
        rows.iter().any(|(r, _)| r.stencils.iter().any(|s| s.1)),
        "some row is crowded"
    );
    assert!(
        rows.iter().any(|(r, _)| r.stencils.iter().any(|s| !s.1)),
        "some row is not crowded"
    );
    let c = columns(&params);
    for (row, total) in &rows {
        let predicted = kernel_prediction(row, &params);
        assert!(
            (predicted - total).abs() <= 1e-12 * total,
            "{} {}: {predicted} against the model's {total}",
            row.program,
            row.variant
        );
        let linear: f64 = kernel_columns(row, &c, exposed)
            .iter()
            .zip(&c)
            .map(|(a, b)| a * b)
            .sum();
        assert!(
            (linear - total).abs() <= 1e-9 * total,
            "{} {}: {linear} against {total}",
            row.program,
            row.variant
        );
    }
}

/// [`refit_truth`], the synthetic measurements it makes exactly (crowding limit 256) and the
/// kernel rows timed at its predictions.
fn exact_refit_data() -> (
    Params,
    Vec<crate::training_runs::Measurement>,
    Vec<crate::kernels::KernelRow>,
) {
    let truth = refit_truth();
    let truth_fast = crate::family_coefficients(&truth, Family::Fast);
    let truth_slow = crate::family_coefficients(&truth, Family::Slow);
    let measurements = exact_measurements(&truth_fast, &truth_slow, 256, 12);
    let rows = kernel_rows(truth)
        .into_iter()
        .map(|(mut r, t)| {
            r.seconds = t;
            r
        })
        .collect();
    (truth, measurements, rows)
}

/// Times that the model with some parameters makes exactly, synthetic and kernel alike: the
/// refit predicts every one of them (its objective reaches zero), and keeps the synthetic
/// fit's crowding limit and the base body at zero.
#[test]
fn the_kernel_refit_fits_exact_times_of_both_kinds() {
    let (truth, measurements, mut rows) = exact_refit_data();
    // Start from parameters that predict the kernels badly: the stream body halved.
    let mut start = truth;
    start.slow_stream.body *= 0.5;
    start.fast.body *= 2.0;
    let refit = crate::kernels::refit(&measurements, &rows, &start, HIGHS, None).unwrap();
    assert!(refit.within_20_before < 1.0, "{refit:?}");
    assert_eq!(refit.within_20_after, 1.0, "{refit:?}");
    assert!(refit.rounds >= 1, "{refit:?}");
    let p = refit.params;
    assert_eq!(p.slow_base.body, 0.0);
    assert_eq!(p.crowded.row_streams, 256);
    for r in &rows {
        let predicted = crate::kernels::kernel_prediction(r, &p);
        assert!(
            (predicted / r.seconds - 1.0).abs() < 1e-5,
            "{} {}: {predicted} against {}",
            r.program,
            r.variant,
            r.seconds
        );
    }
    let (r2_fast, r2_slow) = crate::synthetic_r2(&measurements, &p);
    assert!(
        r2_fast > 0.99999 && r2_slow > 0.99999,
        "{r2_fast} {r2_slow}"
    );
    // With kernel rows from other parameters, the refit moves toward them: the kernels are
    // predicted better than by the synthetic data's own parameters.
    let mut other = truth;
    other.slow_base.peel = 0.0;
    other.slow_stream.body *= 1.5;
    for r in rows.iter_mut() {
        r.seconds = crate::kernels::kernel_prediction(r, &other);
    }
    let refit = crate::kernels::refit(&measurements, &rows, &truth, HIGHS, None).unwrap();
    assert!(refit.within_20_after > refit.within_20_before, "{refit:?}");
}

/// The fast fit with the compute body held at its true value recovers the other fast
/// parameters from exact times; held at twice it, it keeps that value and the others move,
/// none below zero; the kernel refit keeps a held value through its rounds.
#[test]
fn a_held_compute_body_stays_and_the_rest_of_the_fast_fit_takes_what_is_left() {
    let (truth, measurements, rows) = exact_refit_data();
    let close = |x: f64, t: f64| (x - t).abs() <= 1e-6 * t.abs();
    let mut held = crate::fit_measurements(measurements.clone(), HIGHS).unwrap();
    let slow_before = (held.params.slow_stream, held.params.slow_base, held.r2_slow);
    crate::hold_compute_body(&mut held, truth.compute.body, HIGHS).unwrap();
    let p = held.params;
    assert_eq!(p.compute.body, truth.compute.body);
    assert!(close(p.fast.peel, truth.fast.peel), "{p:?}");
    assert!(close(p.fast.body, truth.fast.body), "{p:?}");
    assert!(close(p.compute.peel, truth.compute.peel), "{p:?}");
    assert!(held.r2_fast > 0.99999, "{}", held.r2_fast);
    assert_eq!((p.slow_stream, p.slow_base, held.r2_slow), slow_before);
    let mut doubled = held.clone();
    crate::hold_compute_body(&mut doubled, 2.0 * truth.compute.body, HIGHS).unwrap();
    let q = doubled.params;
    assert_eq!(q.compute.body, 2.0 * truth.compute.body);
    assert!(
        [q.fast.peel, q.fast.body, q.compute.peel]
            .iter()
            .all(|&c| c >= 0.0),
        "{q:?}"
    );
    assert!(
        !(close(q.fast.peel, truth.fast.peel)
            && close(q.fast.body, truth.fast.body)
            && close(q.compute.peel, truth.compute.peel)),
        "{q:?}"
    );
    assert!(doubled.r2_fast < 1.0, "{}", doubled.r2_fast);
    let held_value = 1.5 * truth.compute.body;
    let refit =
        crate::kernels::refit(&measurements, &rows, &truth, HIGHS, Some(held_value)).unwrap();
    assert_eq!(refit.params.compute.body, held_value);
    let free = crate::kernels::refit(&measurements, &rows, &truth, HIGHS, None).unwrap();
    assert!(
        close(free.params.compute.body, truth.compute.body),
        "{free:?}"
    );
}

/// A sweep of group `g` along `d` tries every other count of the ladder for that one tile
/// count, nothing else changed but streaming (canonical, as the auto-tuning grid's), each with
/// the model's prediction, cheapest first; the search's tile bounds hold.
#[test]
fn sweeps_change_one_tile_count_to_every_other_rung_of_the_ladder() {
    use crate::kernels::kernel_programs;
    use absinthe_measure::variants::{autotune_counts, sweep};
    use absinthe_model::cost_model::evaluate::evaluate;
    use absinthe_model::cost_model::options::SearchSpace;
    let view = view_with(refit_truth());
    let mut checked = 0;
    for (program, analysis) in kernel_programs().unwrap() {
        let n = analysis.stencils.len();
        let ladders = autotune_counts(analysis.domain);
        let options = SearchSpace::default();
        let stream = options.stream_shape(&analysis, &view);
        for groups in [(0..n).collect::<Vec<_>>(), vec![0; n]] {
            let ngroups = groups.iter().max().map_or(0, |g| g + 1);
            let start = Configuration::new(groups, vec![[1, 2, 5]; ngroups])
                .canonical_stream(&analysis, &view, stream);
            for g in 0..ngroups {
                for d in 0..3 {
                    let swept = sweep(&analysis, &view, &options, &start, g, d, &ladders[d]);
                    let mut counts: Vec<usize> = Vec::new();
                    let mut last = (false, f64::NEG_INFINITY);
                    for s in &swept {
                        let (config, predicted, feasible) = (&s.config, &s.predicted, &s.feasible);
                        let mut tiles = start.tiles.clone();
                        tiles[g][d] = config.tiles[g][d];
                        assert_eq!(config.tiles, tiles, "{}: {config:?}", program.name);
                        assert_eq!(config.groups, start.groups);
                        let canonical = Configuration::new(config.groups.clone(), tiles)
                            .canonical_stream(&analysis, &view, stream);
                        assert_eq!(config.stream, canonical.stream);
                        let cost = evaluate(&analysis, &view, config);
                        assert_eq!(predicted.to_bits(), cost.total.to_bits());
                        assert_eq!(*feasible, cost.is_feasible());
                        // Feasible ones first, each kind cheapest first.
                        let here = (!feasible, *predicted);
                        if !predicted.is_nan() {
                            assert!(last <= here, "not in order: {swept:?}");
                        }
                        last = here;
                        counts.push(config.tiles[g][d]);
                    }
                    counts.sort_unstable();
                    let mut expected: Vec<usize> = ladders[d]
                        .iter()
                        .copied()
                        .filter(|&c| c != start.tiles[g][d])
                        .collect();
                    expected.sort_unstable();
                    assert_eq!(counts, expected, "{} group {g} along {d}", program.name);
                    checked += 1;
                }
            }
        }
        // Tile bounds from the search hold: at most 4 tiles along z.
        let bounded = SearchSpace {
            tiles_max: Some([analysis.domain[0], analysis.domain[1], 4]),
            ..SearchSpace::default()
        };
        let start = Configuration::new(vec![0; n], vec![[1, 2, 2]]);
        let swept = sweep(&analysis, &view, &bounded, &start, 0, 2, &ladders[2]);
        assert!(!swept.is_empty() || analysis.domain[2] < 4);
        assert!(swept.iter().all(|s| s.config.tiles[0][2] <= 4), "{swept:?}");
    }
    assert!(checked > 0);
}

/// A made-up landscape on j3d7pt for the measured search of `tune --refine`, in whole-row
/// tilings of one group: the start (two rungs from the end of the z ladder) runs in 0.90 s, a
/// z neighbour of it (`tie_z`) in `tie_seconds`, a valley one y move from that neighbour in
/// 0.80 s, everything else in 1.0 s. With `tie_given`, the neighbour is a starting candidate
/// whose prediction is the start's (a tie the model cannot break) rather than found by the
/// start's z sweep. Runs the search with a budget of 40, checks what every step must keep (one
/// group's count along one dimension changed, nothing timed twice, x swept only from the
/// fastest, the budget), and returns the probes, the fastest, the steps (source, dimension,
/// configurations, fastest so far), and the tie's and the valley's tiles.
#[allow(clippy::type_complexity)]
fn sweep_landscape(
    tie_seconds: f64,
    tie_given: bool,
) -> (
    Vec<absinthe_measure::variants::Probe>,
    usize,
    Vec<(usize, usize, usize, usize)>,
    [usize; 3],
    [usize; 3],
) {
    use crate::kernels::kernel_programs;
    use absinthe_measure::variants::{
        autotune_counts, measured_sweeps, Probe, StepTimes, SweepStep,
    };
    use absinthe_model::cost_model::evaluate::evaluate;
    use absinthe_model::cost_model::options::SearchSpace;
    let view = view_with(refit_truth());
    let (_, analysis) = kernel_programs()
        .unwrap()
        .into_iter()
        .find(|(p, _)| p.name == "j3d7pt")
        .unwrap();
    let options = SearchSpace::default();
    let stream = options.stream_shape(&analysis, &view);
    let ladders = autotune_counts(analysis.domain);
    let n = analysis.stencils.len();
    // Counts, largest first: the start two rungs from the end of the z ladder, its tie one more.
    let zs = &ladders[2];
    let (start_z, tie_z, valley_y) = (zs[zs.len() - 2], zs[zs.len() - 3], ladders[1][2]);
    assert!(start_z != tie_z && valley_y != 1, "{ladders:?}");
    let seconds = |tiles: [usize; 3]| match tiles {
        [1, 1, z] if z == start_z => 0.90,
        [1, 1, z] if z == tie_z => tie_seconds,
        [1, y, z] if y == valley_y && z == tie_z => 0.80,
        _ => 1.0,
    };
    let probe = |tiles: [usize; 3]| {
        let config =
            Configuration::new(vec![0; n], vec![tiles]).canonical_stream(&analysis, &view, stream);
        Probe {
            space: 0,
            predicted: evaluate(&analysis, &view, &config).total,
            config,
            feasible: true,
            seconds: Some(seconds(tiles)),
            from: None,
        }
    };
    let mut probes = vec![probe([1, 1, start_z])];
    if tie_given {
        let mut tie = probe([1, 1, tie_z]);
        tie.predicted = probes[0].predicted;
        probes.push(tie);
    }
    let budget = 40;
    let start_probes = probes.len();
    let mut steps: Vec<(usize, usize, usize, usize)> = Vec::new();
    let mut timed: Vec<Configuration> = probes.iter().map(|p| p.config.clone()).collect();
    let mut known = probes.clone();
    let best = measured_sweeps(
        std::slice::from_ref(&analysis),
        &view,
        &options,
        &mut probes,
        budget,
        |step: &SweepStep| -> Result<StepTimes, ()> {
            let source = &known[step.source].config;
            for s in step.swept {
                let changed: Vec<(usize, usize)> = (0..3)
                    .filter(|&d| s.config.tiles[0][d] != source.tiles[0][d])
                    .map(|d| (0, d))
                    .collect();
                assert_eq!(changed, vec![(step.group, step.dim)], "{:?}", s.config);
                assert!(!timed.contains(&s.config), "timed twice: {:?}", s.config);
                timed.push(s.config.clone());
            }
            assert!(
                step.dim != 0 || step.source == step.best,
                "x from a runner-up"
            );
            steps.push((step.source, step.dim, step.swept.len(), step.best));
            let times = StepTimes {
                swept: step
                    .swept
                    .iter()
                    .map(|s| Some(seconds(s.config.tiles[0])))
                    .collect(),
                best: Some(seconds(known[step.best].config.tiles[0])),
            };
            known.extend(step.swept.iter().zip(&times.swept).map(|(s, &t)| Probe {
                space: 0,
                config: s.config.clone(),
                predicted: s.predicted,
                feasible: s.feasible,
                seconds: t,
                from: Some(step.source),
            }));
            Ok(times)
        },
    )
    .unwrap()
    .unwrap();
    let spent: usize = steps.iter().map(|s| s.2).sum();
    assert!(
        spent <= budget && probes.len() == start_probes + spent,
        "{steps:?}"
    );
    // Every probe's record is the timer's: the search and the timing closure agree.
    for (p, k) in probes.iter().zip(&known) {
        assert_eq!((&p.config, p.from), (&k.config, k.from));
    }
    // Along x, each fastest so far is swept at most once.
    let x_from: Vec<usize> = steps.iter().filter(|s| s.1 == 0).map(|s| s.0).collect();
    let mut distinct = x_from.clone();
    distinct.dedup();
    assert_eq!(x_from, distinct, "{steps:?}");
    (probes, best, steps, [1, 1, tie_z], [1, valley_y, tie_z])
}

/// The measured search of `tune --refine`: where the fastest's single moves are all slower, it
/// goes on from a z neighbour measured within noise of it (found by the start's z sweep): the
/// start along z, then y, then the neighbour along y, before the start along x; and so finds
/// the valley one y move from that neighbour.
#[test]
fn measured_sweeps_go_on_from_a_near_tie_when_the_fastest_stalls() {
    let (probes, best, steps, tie, valley) = sweep_landscape(0.92, false);
    assert_eq!(probes[best].config.tiles[0], valley, "{steps:?}");
    let tie = probes
        .iter()
        .position(|p| p.config.tiles[0] == tie)
        .unwrap();
    assert_eq!((steps[0].0, steps[0].1), (0, 2), "{steps:?}");
    assert_eq!((steps[1].0, steps[1].1), (0, 1), "{steps:?}");
    assert_eq!((steps[2].0, steps[2].1), (tie, 1), "{steps:?}");
    assert!(
        !steps.iter().any(|s| s.0 == 0 && s.1 == 0),
        "the start was swept along x before its near tie: {steps:?}"
    );
}

/// A candidate the model cannot tell from the fastest (predicted the same) is swept along z and
/// y before the fastest along x, however slowly it ran (here 33% slower than the start):
/// cosmo_hdiff4's valley is one y move from such a tie of the model's optimum.
#[test]
fn measured_sweeps_sweep_the_models_ties_of_the_fastest_however_slow() {
    let (probes, best, steps, _, valley) = sweep_landscape(1.2, true);
    assert_eq!(probes[best].config.tiles[0], valley, "{steps:?}");
    let tie_y = steps.iter().position(|s| s.0 == 1 && s.1 == 1);
    let start_x = steps.iter().position(|s| s.0 == 0 && s.1 == 0);
    assert!(
        tie_y.is_some() && start_x.is_none_or(|x| tie_y.unwrap() < x),
        "{steps:?}"
    );
}

/// The H100 machine file shipped with the project.
fn h100() -> Machine {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../machines/h100.yaml");
    Machine::from_yaml(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A bundle output line pair for `label`: its verification and its timing.
fn gpu_lines(label: &str, verified: bool, seconds: f64) -> String {
    format!(
        "ABSINTHE_RESULT {{\"label\":\"{label}\",\"verified\":{verified},\"times\":[]}}\nABSINTHE_CUDA_TIMING {{\"label\":\"{label}\",\"device\":\"NVIDIA H100 80GB HBM3\",\"runs\":24,\"median\":{seconds:e}}}\n"
    )
}

#[test]
fn gpu_training_shapes_are_warp_aligned_admissible_and_few() {
    use crate::gpu;
    let machine = h100();
    let view = gpu::view(&machine).unwrap();
    let (manifest, files) = gpu::emit(&machine, gpu::DOMAIN, gpu::SHAPES, 8, 0, HIGHS).unwrap();
    // Every training program has shapes on the H100, both families, split over bundles whose
    // loop-bound tables fit the device's 64 KiB of constant memory.
    assert_eq!(files.len(), manifest.bundles.len());
    let mut per_program = std::collections::HashMap::new();
    let mut labels = std::collections::HashSet::new();
    for (b, (name, text)) in manifest.bundles.iter().zip(&files) {
        assert_eq!(&b.file, name);
        *per_program.entry(b.program.clone()).or_insert(0) += b.cases.len();
        let tables: usize = b
            .cases
            .iter()
            .map(|c| training::STENCILS * 2 * c.tiles.iter().sum::<usize>() * 4)
            .sum();
        assert!(
            b.cases.len() == 1 || tables <= gpu::CONSTANT_BYTES,
            "{}: {tables} bytes",
            b.file
        );
        let p = training::programs(gpu::DOMAIN)
            .unwrap()
            .into_iter()
            .find(|p| p.program.name == b.program)
            .unwrap();
        for c in &b.cases {
            assert!(labels.insert(c.label.clone()), "{} twice", c.label);
            // Warps stay aligned: x tiles are multiples of 32 cells.
            assert_eq!(c.size[0] % 32, 0, "{}", c.label);
            let config = training::configuration(&p.analysis, c.tiles, true);
            let cost = absinthe_model::cost_model::evaluate::evaluate(&p.analysis, &view, &config);
            assert!(
                cost.infeasible.is_none(),
                "{}: {:?}",
                c.label,
                cost.infeasible
            );
            // The bundle names the case's result lines.
            for tag in ["RESULT", "CUDA_TIMING"] {
                let line = format!("ABSINTHE_{tag} {{\\\"label\\\":\\\"{}\\\"", c.label);
                assert!(text.contains(&line), "{line}");
            }
        }
    }
    assert_eq!(per_program.len(), 15);
    for (program, cases) in &per_program {
        assert!(
            (8..=gpu::SHAPES).contains(cases),
            "{program}: {cases} shapes"
        );
    }
    // A device asking for more blocks than any tiling of the domain has admits nothing, and
    // says so.
    let mut tiny = machine.clone();
    tiny.gpu.as_mut().unwrap().sm_count = 1 << 20;
    let e = gpu::emit(&tiny, gpu::DOMAIN, gpu::SHAPES, 8, 0, HIGHS).unwrap_err();
    assert!(e.to_string().contains("no tile shape"), "{e}");
    // A CPU machine file is refused.
    let mut cpu = machine;
    cpu.gpu = None;
    assert!(gpu::view(&cpu)
        .unwrap_err()
        .to_string()
        .contains("no `gpu:` section"));
}

#[test]
fn gpu_timings_fit_the_parameters_they_were_made_from() {
    use crate::gpu;
    let machine = h100();
    let (manifest, _) = gpu::emit(&machine, gpu::DOMAIN, gpu::SHAPES, 8, 0, HIGHS).unwrap();
    // Times made by known coefficients through the model's counts, ±2% noise.
    let fast = [3.0e-12, 4.0e-13, 1.0e-12, 2.0e-13];
    let slow = [0.0, 0.0, 2.0e-11, 1.5e-12, 0.0];
    let ones = gpu::placeholder_timings(&manifest);
    let counted = gpu::measurements(&manifest, &ones, &machine).unwrap();
    let mut rng = Rng::new(7);
    let mut output = String::new();
    for (m, t) in counted.iter().zip(&ones) {
        let coefficients: &[f64] = if m.family == Family::Fast {
            &fast
        } else {
            &slow
        };
        let exact = crate::fit::predict(coefficients, &m.counts.fit_counts(m.family, 0));
        let noise = 1.0 + (rng.range(-200, 200) as f64) * 1e-4;
        output.push_str("some other line the harness printed\n");
        output.push_str(&gpu_lines(&t.label, true, exact * noise));
    }
    let timings = gpu::parse_output(&output).unwrap();
    assert_eq!(timings.len(), counted.len());
    assert_eq!(gpu::device_name(&timings), Some("NVIDIA H100 80GB HBM3"));
    let measured = gpu::measurements(&manifest, &timings, &machine).unwrap();
    let result = crate::fit_measurements(measured, HIGHS).unwrap();
    assert!(
        result.r2_fast > 0.99 && result.r2_slow > 0.99,
        "{} {}",
        result.r2_fast,
        result.r2_slow
    );
    // Every configuration is predicted within the noise (2%) and a little more.
    for (predicted, measured) in result.fast_medians.iter().chain(&result.slow_medians) {
        assert!(
            (predicted / measured - 1.0).abs() < 0.05,
            "{predicted} vs {measured}"
        );
    }

    // A case that failed verification, or that has no timing, is an error naming it.
    let first = &ones[0].label;
    let unverified = output.replacen(
        &format!("\"label\":\"{first}\",\"verified\":true"),
        &format!("\"label\":\"{first}\",\"verified\":false"),
        1,
    );
    let e = gpu::measurements(
        &manifest,
        &gpu::parse_output(&unverified).unwrap(),
        &machine,
    )
    .unwrap_err();
    assert!(
        e.to_string().contains(first.as_str()) && e.to_string().contains("differs"),
        "{e}"
    );
    let missing: String = output
        .lines()
        .filter(|l| !l.contains(&format!("\"label\":\"{first}\"")))
        .map(|l| format!("{l}\n"))
        .collect();
    let e =
        gpu::measurements(&manifest, &gpu::parse_output(&missing).unwrap(), &machine).unwrap_err();
    assert!(
        e.to_string().contains(&format!("no timing for {first}")),
        "{e}"
    );
    // A malformed line names its line number.
    let e = gpu::parse_output("x\nABSINTHE_CUDA_TIMING {\"label\":\"a\",\"median\":inf}\n")
        .unwrap_err();
    assert!(e.to_string().contains("line 2"), "{e}");
}

/// The timings measured on an H100 and on an H200 (tests/data/h100-learn, h200-learn: the
/// manifest `--emit` wrote and the output `sh run.sh` made of it) fit and refit to the
/// parameters machines/h100-learned.yaml and h200-learned.yaml ship, with the R² and refit
/// figures they record: the shipped GPU parameters are what `learn --target cuda` makes of real
/// measurements, and a change to the counts, the fit or the refit shows here. The manifest's
/// training cases are also what `emit` writes.
#[test]
fn the_gpu_timings_fit_to_the_shipped_learned_files() {
    for (data, file, device) in [
        ("h100-learn", "h100-learned.yaml", "NVIDIA H100 80GB HBM3"),
        ("h200-learn", "h200-learned.yaml", "NVIDIA H200"),
    ] {
        gpu_timings_fit_to(data, file, device);
    }
}

fn gpu_timings_fit_to(data: &str, file: &str, device: &str) {
    use crate::gpu;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let data = root.join("tests/data").join(data);
    let text = std::fs::read_to_string(root.join("machines").join(file)).unwrap();
    let shipped = Machine::from_yaml(&text).unwrap();
    let manifest: gpu::Manifest =
        gpu::parse_manifest(&std::fs::read_to_string(data.join("manifest.json")).unwrap()).unwrap();
    let (emitted, _) = gpu::emit(&shipped, gpu::DOMAIN, gpu::SHAPES, gpu::RUNS, 0, HIGHS).unwrap();
    assert_eq!(emitted.bundles, manifest.bundles);
    assert_eq!(
        manifest
            .kernels
            .iter()
            .map(|k| k.cases.len())
            .sum::<usize>(),
        36
    );
    let output = std::fs::read_to_string(data.join("output.txt")).unwrap();
    let timings = gpu::parse_output(&output).unwrap();
    assert_eq!(gpu::device_name(&timings), Some(device));
    let measured = gpu::measurements(&manifest, &timings, &shipped).unwrap();
    assert_eq!(measured.len(), 240);
    let result = crate::fit_measurements(measured, HIGHS).unwrap();
    let learned = shipped.learned.as_ref().unwrap();
    let refit_record = learned.kernel_refit.as_ref().unwrap();
    let close = |a: f64, b: f64| (a - b).abs() < 1e-3;
    assert!(
        close(result.r2_fast, refit_record.r2_synthetic_fit.fast),
        "{}",
        result.r2_fast
    );
    assert!(
        close(result.r2_slow, refit_record.r2_synthetic_fit.slow),
        "{}",
        result.r2_slow
    );
    let rows = gpu::kernel_rows(&manifest, &timings, &shipped, &result.params).unwrap();
    assert_eq!(rows.len(), 36);
    let refit =
        crate::kernels::refit(&result.measurements, &rows, &result.params, HIGHS, None).unwrap();
    assert!(close(refit.within_20_before, refit_record.within_20_before));
    assert!(close(refit.within_20_after, refit_record.within_20_after));
    let (fast, slow) = crate::synthetic_r2(&result.measurements, &refit.params);
    assert!(
        close(fast, learned.r2.fast) && close(slow, learned.r2.slow),
        "{fast} {slow}"
    );
    let params = shipped.params.unwrap();
    for family in [Family::Fast, Family::Slow] {
        let want = crate::family_coefficients(&params, family);
        let got = crate::family_coefficients(&refit.params, family);
        for (w, g) in want.iter().zip(&got) {
            assert!(
                (w - g).abs() <= 1e-3 * w.abs() + 1e-18,
                "{family:?}: {got:?} vs {want:?}"
            );
        }
    }
    assert_eq!(refit.params.crowded.row_streams, params.crowded.row_streams);
}

/// The `caches:` value learn writes reads back as the same levels.
#[test]
fn caches_written_by_learn_read_back() {
    let levels = vec![
        absinthe_model::formats::machine::CacheLevel {
            name: "L1".into(),
            bytes: 48 << 10,
            line: 64,
            ways: 12,
            shared: false,
        },
        absinthe_model::formats::machine::CacheLevel {
            name: "L3".into(),
            bytes: 32 << 20,
            line: 64,
            ways: 16,
            shared: true,
        },
    ];
    let text = format!("name: m\ncaches: {}\n", machine_file::caches_yaml(&levels));
    let m = Machine::from_yaml(&text).unwrap();
    assert_eq!(m.caches, Some(levels));
}
