//! A machine file's `network:` section: the MPI transport between ranks, as the model of a
//! decomposed program prices it (docs/MODEL.md, "Many ranks"). `learn --ranks N` measures it;
//! a file may also carry an interconnect's published figures.

use serde::{Deserialize, Serialize};

use crate::formats::diagnostic::{control_character_in, Diagnostic};

/// The transport's cost of one message: `latency_us` microseconds, plus its bytes at
/// `bandwidth_gbs` GB/s, plus `run_ns` nanoseconds per contiguous run of cells in it (a halo
/// box is packed row by row: a strip along x of width 2 is many short runs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// Microseconds per message whatever its size: half the round trip of the smallest
    /// ping-pong message.
    pub latency_us: f64,
    /// GB/s (10^9 bytes per second) at which a rank receives the cells of a halo exchange,
    /// packing and unpacking included.
    pub bandwidth_gbs: f64,
    /// Nanoseconds per contiguous run of cells (a row of a halo box) packed or unpacked;
    /// absent: 0.
    #[serde(default)]
    pub run_ns: f64,
    /// What the figures describe: the MPI library and transport measured, or the
    /// interconnect's data sheet.
    #[serde(default)]
    pub source: String,
}

/// The most microseconds per message a file may give (one second).
pub const MAX_LATENCY_US: f64 = 1e6;
/// The most GB/s a file may give.
pub const MAX_BANDWIDTH_GBS: f64 = 1e5;
/// The fewest GB/s a file may give (a kilobyte per second): below it a halo exchange's
/// seconds overflow.
pub const MIN_BANDWIDTH_GBS: f64 = 1e-6;

impl Network {
    /// Seconds of one message of `bytes` bytes in `runs` contiguous runs.
    pub fn message_seconds(&self, bytes: f64, runs: f64) -> f64 {
        self.latency_us * 1e-6 + bytes / (self.bandwidth_gbs * 1e9) + runs * self.run_ns * 1e-9
    }

    /// Range checks; errors name `network.<key>`.
    pub fn validate(&self, errors: &mut Vec<Diagnostic>) {
        if !(self.latency_us > 0.0 && self.latency_us <= MAX_LATENCY_US) {
            errors.push(Diagnostic::new(
                "network.latency_us",
                format!(
                    "network.latency_us must be above 0 and at most {MAX_LATENCY_US} (microseconds), found {}",
                    self.latency_us
                ),
            ));
        }
        if !(MIN_BANDWIDTH_GBS..=MAX_BANDWIDTH_GBS).contains(&self.bandwidth_gbs) {
            errors.push(Diagnostic::new(
                "network.bandwidth_gbs",
                format!(
                    "network.bandwidth_gbs must be from {MIN_BANDWIDTH_GBS} to {MAX_BANDWIDTH_GBS} (GB/s), found {}",
                    self.bandwidth_gbs
                ),
            ));
        }
        if !(self.run_ns >= 0.0 && self.run_ns <= MAX_LATENCY_US * 1e3) {
            errors.push(Diagnostic::new(
                "network.run_ns",
                format!(
                    "network.run_ns must be at least 0 and at most {} (nanoseconds), found {}",
                    MAX_LATENCY_US * 1e3,
                    self.run_ns
                ),
            ));
        }
        if self.source.chars().count() > 200 {
            errors.push(Diagnostic::new(
                "network.source",
                "network.source must be at most 200 characters",
            ));
        }
        errors.extend(control_character_in(
            &self.source,
            "network.source",
            "network.source",
            "it",
        ));
    }
}
