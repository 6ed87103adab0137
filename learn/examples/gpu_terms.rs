//! The GPU timings of tests/data (`learn --target cuda` on an H100 and an H200) as CSV rows
//! with the counts benches/gpu_terms.py tries as model terms: for each training case its
//! measured seconds, the model's counts, the thread block and its shared memory, and the
//! slow-stream accesses split into the compulsory ones (the tile counts all 1) and the halo
//! re-reads each dimension's tiling adds; for each kernel variant the same per stencil, from
//! its stream weights.
//!
//! ```sh
//! cargo run -p absinthe-learn --example gpu_terms -- OUT_DIR
//! build/halide-venv/bin/python benches/gpu_terms.py OUT_DIR
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use absinthe_learn::{gpu, training};
use absinthe_model::cost_model::evaluate::{evaluate, group_shape};
use absinthe_model::cost_model::inline_search::apply as inline_apply;
use absinthe_model::formats::machine::Machine;

/// The timings and the learned file made from them.
const DATA: [(&str, &str); 2] = [
    ("h100-learn", "h100-learned.yaml"),
    ("h200-learn", "h200-learned.yaml"),
];

fn main() -> Result<(), String> {
    let out = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .ok_or("usage: gpu_terms OUT_DIR")?;
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for (data, file) in DATA {
        let read =
            |p: PathBuf| std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()));
        let dir = root.join("tests/data").join(data);
        let machine = Machine::from_yaml(&read(root.join("machines").join(file))?)
            .map_err(|e| format!("{file}: {e:?}"))?;
        let manifest =
            gpu::parse_manifest(&read(dir.join("manifest.json"))?).map_err(|e| e.to_string())?;
        let timings =
            gpu::parse_output(&read(dir.join("output.txt"))?).map_err(|e| e.to_string())?;
        let training = training_rows(&manifest, &timings, &machine)?;
        let kernels = kernel_rows(&manifest, &timings, &machine)?;
        for (name, text) in [
            (format!("{data}.csv"), training),
            (format!("{data}-kernels.csv"), kernels),
        ] {
            let path = out.join(name);
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
            println!("wrote {}", path.display());
        }
    }
    Ok(())
}

/// One row per training case.
fn training_rows(
    manifest: &gpu::Manifest,
    timings: &[gpu::Timing],
    machine: &Machine,
) -> Result<String, String> {
    let measured = gpu::measurements(manifest, timings, machine).map_err(|e| e.to_string())?;
    let programs = training::programs(manifest.domain).map_err(|e| e.to_string())?;
    let threads = machine
        .model_view(8)
        .map_err(|e| format!("{e:?}"))?
        .block_threads;
    let mut out = String::from("program,family,tx,ty,tz,seconds,fast_body,compute_body,base_peel,stream_body,bx,by,shared_values,compulsory,stream_x,stream_y,stream_z\n");
    for m in &measured {
        let p = programs
            .iter()
            .find(|p| p.program.name == m.program)
            .ok_or("unknown program")?;
        let a = &p.analysis;
        let plan = group_shape(a, 0..a.stencils.len(), 1).block_plan(a, m.tiles, true, threads);
        let stream = |t: [usize; 3]| {
            training::run_counts_on(a, t, Some(threads))
                .counts
                .slow_stream
                .body
        };
        let [tx, ty, tz] = m.tiles;
        let c = &m.counts.counts;
        writeln!(
            out,
            "{},{},{tx},{ty},{tz},{:e},{},{},{},{},{},{},{},{},{},{},{}",
            m.program,
            m.family.name(),
            m.seconds,
            c.fast.body,
            c.compute.body,
            c.slow_base.peel,
            c.slow_stream.body,
            plan.block[0],
            plan.block[1],
            plan.shared_values(),
            stream([1, 1, 1]),
            stream([tx, 1, 1]),
            stream([1, ty, 1]),
            stream([1, 1, tz]),
        )
        .map_err(|e| e.to_string())?;
    }
    Ok(out)
}

/// One row per stencil of each kernel variant.
fn kernel_rows(
    manifest: &gpu::Manifest,
    timings: &[gpu::Timing],
    machine: &Machine,
) -> Result<String, String> {
    let view = machine.model_view(8).map_err(|e| format!("{e:?}"))?;
    let programs = gpu::kernel_programs(manifest.domain).map_err(|e| e.to_string())?;
    let mut out = String::from("program,variant,seconds,group,crowded,w0,wx,wy,wz,dx,dy,dz,nx,ny,nz,fast_body,compute_body,base_peel,stream_body\n");
    for b in &manifest.kernels {
        let (program, _) = programs
            .iter()
            .find(|(p, _)| p.name == b.program)
            .ok_or("unknown kernel")?;
        for c in &b.cases {
            let t = timings
                .iter()
                .find(|t| t.label == c.label)
                .ok_or("no timing")?;
            let (_, an, _) = inline_apply(program, view.params.operations, &c.inline)
                .map_err(|e| e.to_string())?;
            let cost = evaluate(&an, &view, &c.config);
            for (g, gc) in cost.groups.iter().enumerate() {
                for (k, s) in gc.stencils.iter().enumerate() {
                    let [dx, dy, dz] = an.counted_domain(gc.range.start + k);
                    let [w0, wx, wy, wz] = s.stream_weights;
                    let [nx, ny, nz] = gc.tiles;
                    writeln!(
                        out,
                        "{},{},{:e},{g},{},{w0},{wx},{wy},{wz},{dx},{dy},{dz},{nx},{ny},{nz},{},{},{},{}",
                        b.program, c.variant, t.seconds, gc.crowded as u8,
                        s.counts.fast.body, s.counts.compute.body, s.counts.slow_base.peel, s.counts.slow_stream.body,
                    )
                    .map_err(|e| e.to_string())?;
                }
            }
        }
    }
    Ok(out)
}
