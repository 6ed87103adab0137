//! `scripts/setup.sh`: what it decides to install, from dpkg's own answers (faked here), and
//! what it tells a user who is not root. Also: the shipped default files are found from any
//! working directory.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{root, stderr, stdout};

/// A fake `dpkg-query` that reports exactly `installed` as installed and everything else as
/// unknown (exit 1, as dpkg-query does for a package it has never seen).
fn fake_dpkg(dir: &Path, installed: &[&str]) -> PathBuf {
    let path = dir.join("dpkg-query");
    let cases: String = installed
        .iter()
        .map(|p| format!("  {p}) printf 'install ok installed'; exit 0 ;;\n"))
        .collect();
    let script = format!(
        "#!/bin/sh\n# args: -W -f=FORMAT PKG\neval pkg=\\${{$#}}\ncase \"$pkg\" in\n{cases}  *) echo \"dpkg-query: no packages found matching $pkg\" >&2; exit 1 ;;\nesac\n"
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn setup(dpkg: &Path, args: &[&str], uid: &str, path_env: Option<&Path>) -> Output {
    let mut cmd = Command::new("/bin/bash");
    cmd.arg(root().join("scripts/setup.sh"))
        .args(args)
        .env("ABSINTHE_DPKG_QUERY", dpkg)
        .env("ABSINTHE_SETUP_UID", uid);
    if let Some(p) = path_env {
        cmd.env("PATH", p);
    }
    cmd.output().expect("run setup.sh")
}

const ALL: &[&str] = &[
    "pkg-config",
    "cmake",
    "g++",
    "libgomp1",
    "coinor-libcbc-dev",
    "libz3-dev",
    "libclang-dev",
    "python3-venv",
    "fonts-dejavu-core",
    "openmpi-bin",
    "libopenmpi-dev",
];

#[test]
fn a_machine_with_only_libclang_cpp_gets_libclang_dev() {
    let dir = tempfile::tempdir().unwrap();
    // The situation of the bug report: libclang-cpp14 (the C++ API) is there, libclang is not.
    let present: Vec<&str> = ALL
        .iter()
        .copied()
        .filter(|p| *p != "libclang-dev")
        .chain(["libclang-cpp14", "libclang1-14"])
        .collect();
    let dpkg = fake_dpkg(dir.path(), &present);
    let o = setup(&dpkg, &["--dry-run"], "0", None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "libclang-dev");
}

#[test]
fn a_fresh_machine_gets_every_package_and_a_complete_one_none() {
    let dir = tempfile::tempdir().unwrap();
    let none = fake_dpkg(dir.path(), &["g++"]);
    let o = setup(&none, &["--dry-run"], "0", None);
    assert!(o.status.success(), "{}", stderr(&o));
    let want: Vec<&str> = ALL.iter().copied().filter(|p| *p != "g++").collect();
    assert_eq!(stdout(&o).split_whitespace().collect::<Vec<_>>(), want);

    let sub = dir.path().join("all");
    std::fs::create_dir(&sub).unwrap();
    let all = fake_dpkg(&sub, ALL);
    let o = setup(&all, &["--dry-run"], "0", None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "");
    // Nothing missing: the real run installs nothing and succeeds, even without root.
    let o = setup(&all, &[], "1000", None);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn without_root_it_prints_the_one_apt_line_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let present: Vec<&str> = ALL
        .iter()
        .copied()
        .filter(|p| !["cmake", "libclang-dev"].contains(p))
        .collect();
    let dpkg = fake_dpkg(dir.path(), &present);
    // A PATH with neither sudo nor apt-get: the script must not try them.
    let empty = dir.path().join("bin");
    std::fs::create_dir(&empty).unwrap();
    let o = setup(&dpkg, &[], "1000", Some(&empty));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("apt-get install cmake libclang-dev"),
        "setup.sh said: {err}"
    );
}

#[test]
fn unknown_arguments_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let dpkg = fake_dpkg(dir.path(), ALL);
    let o = setup(&dpkg, &["--install-everything"], "0", None);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown argument"), "{}", stderr(&o));
}

#[test]
fn default_machine_is_found_from_any_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let program = root().join("configs/example2.yaml");
    let o = Command::new(env!("CARGO_BIN_EXE_absinthe"))
        .args(["solve", program.to_str().unwrap(), "--format", "json"])
        .current_dir(dir.path())
        .env_remove("ABSINTHE_HOME")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("\"estimate_seconds\""),
        "{}",
        stdout(&o)
    );

    // A missing explicit --machine names the file.
    let o = Command::new(env!("CARGO_BIN_EXE_absinthe"))
        .args(["solve", program.to_str().unwrap(), "--machine", "nope.yaml"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("nope.yaml"), "{}", stderr(&o));
}
