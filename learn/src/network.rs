//! `learn --ranks N`: the MPI transport between ranks, for the machine file's `network:`
//! section (docs/MODEL.md, "Many ranks"). A generated program
//! (`codegen/templates/mpi_network.cpp.j2`) runs under `mpirun`: a ping-pong between two ranks
//! gives the latency (half the round trip of an 8-byte message), and the generated code's own
//! halo exchange on a Cartesian grid of the N ranks gives the bandwidth at which a rank
//! receives halo cells, packing included: the least-squares slope, through the origin, of each
//! rank's exchange time less its messages' latency against its incoming bytes.

use std::path::Path;
use std::process::Command;

use absinthe_codegen::render::Renderer;
use absinthe_model::formats::machine::Machine;
use absinthe_model::formats::network::Network;

use crate::machine_file::set_top_level;
use crate::LearnError;

/// Cells exchanged on each side in the halo pattern, and the sub-domains' levels.
const WIDTH: usize = 2;
const LEVELS: usize = 60;

/// One rank's exchange in the halo pattern.
#[derive(Clone, Debug, PartialEq)]
pub struct HaloSample {
    /// The grid, `PXxPY`.
    pub grid: String,
    /// The sub-domain's cells along x and y.
    pub n: u64,
    pub rank: u64,
    pub messages: u64,
    pub bytes: u64,
    /// Contiguous runs of cells received.
    pub runs: u64,
    pub seconds: f64,
}

/// What was measured and the network it gives.
#[derive(Clone, Debug)]
pub struct NetworkMeasurement {
    pub network: Network,
    /// `(bytes, seconds)` of one ping-pong message (half a round trip).
    pub pingpong: Vec<(u64, f64)>,
    /// The halo exchange samples.
    pub halo: Vec<HaloSample>,
    /// Per halo sample, the network's prediction over the measured time.
    pub ratios: Vec<f64>,
}

impl NetworkMeasurement {
    /// The machine file's text `text` with its `network:` section set to this network, every
    /// other key as written; checked to read back.
    pub fn machine_text(&self, text: &str) -> Result<String, LearnError> {
        let n = &self.network;
        let value = format!(
            "{{latency_us: {:.4}, bandwidth_gbs: {:.4}, run_ns: {:.4}, source: \"{}\"}}",
            n.latency_us,
            n.bandwidth_gbs,
            n.run_ns,
            n.source.replace('"', "'")
        );
        let new_text = set_top_level(text, "network", &value);
        Machine::from_yaml(&new_text).map_err(|d| {
            LearnError::Invalid(format!("the new network section does not read back: {d:?}"))
        })?;
        Ok(new_text)
    }
}

/// `learn --ranks`: measures the transport between `ranks` ranks (in a temporary directory)
/// and writes the machine file's `text`, its `network:` section set, to `out` with `write`
/// (the caller's atomic write); returns what was measured.
pub fn learn<E: From<LearnError>>(
    text: &str,
    ranks: usize,
    out: &Path,
    write: &dyn Fn(&Path, &str) -> Result<(), E>,
) -> Result<NetworkMeasurement, E> {
    let dir =
        tempfile::tempdir().map_err(|e| LearnError::Create("a temporary directory".into(), e))?;
    let measured = measure(ranks, dir.path())?;
    write(out, &measured.machine_text(text)?)?;
    Ok(measured)
}

/// Builds the measurement in `dir` with `mpicxx`, runs it on `ranks` ranks (at most 10
/// minutes), and fits the network.
pub fn measure(ranks: usize, dir: &Path) -> Result<NetworkMeasurement, LearnError> {
    if !(2..=1024).contains(&ranks) {
        return Err(LearnError::Run(format!(
            "--ranks {ranks}: the network is measured between 2 to 1024 ranks"
        )));
    }
    let source = Renderer::embedded().mpi_network(WIDTH, LEVELS)?;
    let cpp = dir.join("network.cpp");
    let exe = dir.join("network");
    std::fs::write(&cpp, source)
        .map_err(|e| LearnError::Run(format!("cannot write {}: {e}", cpp.display())))?;
    let built = absinthe_codegen::children::output(
        Command::new("mpicxx")
            .args(["-O2", "-fopenmp", "-o"])
            .arg(&exe)
            .arg(&cpp),
    )
    .map_err(|e| {
        LearnError::Run(format!(
            "cannot run mpicxx ({e}): scripts/setup.sh installs libopenmpi-dev"
        ))
    })?;
    if !built.status.success() {
        return Err(LearnError::Run(format!(
            "mpicxx failed:\n{}",
            String::from_utf8_lossy(&built.stderr)
        )));
    }
    let run =
        absinthe_codegen::children::mpirun(600, ranks, 1, &[exe.as_os_str()]).map_err(|e| {
            LearnError::Run(format!(
                "cannot run mpirun ({e}): scripts/setup.sh installs openmpi-bin"
            ))
        })?;
    let stdout = String::from_utf8_lossy(&run.stdout);
    if !run.status.success() {
        return Err(LearnError::Run(format!(
            "the network measurement on {ranks} ranks failed (exit {:?}):\n{stdout}{}",
            run.status.code(),
            String::from_utf8_lossy(&run.stderr)
        )));
    }
    fit(&stdout, ranks)
}

/// The network from the measurement's output: the latency from the smallest ping-pong
/// message; bytes and runs by least squares (through the origin) of the halo samples' time less
/// their messages' latency; a run cost that fits below zero is dropped and the bytes refitted
/// alone.
pub fn fit(output: &str, ranks: usize) -> Result<NetworkMeasurement, LearnError> {
    let mut pingpong: Vec<(u64, f64)> = Vec::new();
    let mut halo: Vec<HaloSample> = Vec::new();
    let bad = |line: &str| LearnError::Run(format!("unreadable measurement line `{line}`"));
    for line in output.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.first() {
            Some(&"ABSINTHE_PINGPONG") if f.len() == 3 => pingpong.push((
                f[1].parse().map_err(|_| bad(line))?,
                f[2].parse().map_err(|_| bad(line))?,
            )),
            Some(&"ABSINTHE_HALO") if f.len() == 8 => {
                let num = |i: usize| f[i].parse::<u64>().map_err(|_| bad(line));
                halo.push(HaloSample {
                    grid: f[1].to_string(),
                    n: num(2)?,
                    rank: num(3)?,
                    messages: num(4)?,
                    bytes: num(5)?,
                    runs: num(6)?,
                    seconds: f[7].parse().map_err(|_| bad(line))?,
                })
            }
            _ => {}
        }
    }
    let latency = pingpong
        .iter()
        .min_by_key(|p| p.0)
        .map(|p| p.1)
        .filter(|&s| s > 0.0 && s.is_finite())
        .ok_or_else(|| LearnError::Fit("no ping-pong time in the measurement".into()))?;
    let rest = |h: &HaloSample| h.seconds - h.messages as f64 * latency;
    // Normal equations of rest = bytes * b + runs * r.
    let (mut bb, mut br, mut rr, mut by, mut ry) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for h in &halo {
        let (x1, x2, y) = (h.bytes as f64, h.runs as f64, rest(h));
        bb += x1 * x1;
        br += x1 * x2;
        rr += x2 * x2;
        by += x1 * y;
        ry += x2 * y;
    }
    let det = bb * rr - br * br;
    let (mut per_byte, mut per_run) = ((by * rr - ry * br) / det, (bb * ry - br * by) / det);
    if !(per_run >= 0.0 && per_byte > 0.0 && det.is_normal()) {
        per_run = 0.0;
        per_byte = by / bb;
    }
    if !(per_byte > 0.0 && per_byte.is_finite()) {
        return Err(LearnError::Fit(format!(
            "the halo exchanges give no positive time per byte ({} samples)",
            halo.len()
        )));
    }
    let network = Network {
        latency_us: latency * 1e6,
        bandwidth_gbs: 1e-9 / per_byte,
        run_ns: per_run * 1e9,
        source: format!(
            "learn --ranks {ranks}: MPI ping-pong and halo exchanges on {}",
            crate::machine_file::host_description()
        ),
    };
    let ratios = halo
        .iter()
        .map(|h| {
            network.message_seconds(h.bytes as f64, h.runs as f64)
                + (h.messages as f64 - 1.0) * latency
        })
        .zip(&halo)
        .map(|(p, h)| p / h.seconds)
        .collect();
    Ok(NetworkMeasurement {
        network,
        pingpong,
        halo,
        ratios,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fit_recovers_a_network_it_was_made_from() {
        let (latency, per_byte, per_run) = (2e-6, 1.0 / 5e9, 3e-9);
        let mut out = String::from("ABSINTHE_PINGPONG 8 2.0e-6\nABSINTHE_PINGPONG 512 2.5e-6\n");
        for (n, messages, bytes, runs) in [
            (32, 3, 60_000u64, 100u64),
            (64, 8, 400_000, 9_000),
            (128, 5, 900_000, 300),
        ] {
            let t = messages as f64 * latency + bytes as f64 * per_byte + runs as f64 * per_run;
            out += &format!("ABSINTHE_HALO 2x1 {n} 0 {messages} {bytes} {runs} {t:.9e}\n");
        }
        let m = fit(&out, 4).unwrap();
        assert!((m.network.latency_us - 2.0).abs() < 1e-9);
        assert!((m.network.bandwidth_gbs - 5.0).abs() < 1e-6);
        assert!((m.network.run_ns - 3.0).abs() < 1e-6);
        assert!(m.ratios.iter().all(|r| (r - 1.0).abs() < 1e-6));
    }

    #[test]
    fn a_measurement_without_times_is_refused() {
        assert!(fit("nothing here\n", 2).is_err());
        assert!(fit("ABSINTHE_PINGPONG 8 1e-6\n", 2).is_err());
        assert!(fit("ABSINTHE_PINGPONG x 1e-6\n", 2).is_err());
    }
}
