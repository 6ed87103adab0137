//! What a command writes is written whole or not at all, and an output it could not write is
//! refused before the work that would produce it.

use std::path::Path;

use crate::common::{absinthe, temp_file};
use crate::hostile::assert_clean_error;

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The generated files are one change: when one of them cannot be written (a full device, a
/// link loop), every old file stays as it was and no temporary is left behind.
#[test]
fn codegen_replaces_all_of_its_files_or_none() {
    let dir = tempfile::tempdir().unwrap();
    for (blocker, why) in [("/dev/full", "No space left on device"), ("loop", "")] {
        let out = dir.path().join(format!("out-{}", blocker.replace('/', "")));
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("hdiff.h"), "OLD").unwrap();
        let target = if blocker == "loop" {
            out.join("hdiff.cpp")
        } else {
            blocker.into()
        };
        std::os::unix::fs::symlink(&target, out.join("hdiff.cpp")).unwrap();
        let o = absinthe(&[
            "codegen",
            "configs/hdiff.yaml",
            "--solver",
            "dp",
            "--harness",
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_clean_error(&o, &["hdiff.cpp", why]);
        assert_eq!(std::fs::read_to_string(out.join("hdiff.h")).unwrap(), "OLD");
        assert_eq!(names_in(&out), ["hdiff.cpp", "hdiff.h"], "{blocker}");
    }
}

/// `-o` under a file, a directory as the output, a plot of another kind: refused before
/// anything is solved, built or timed. The machine's compiler is `/bin/false`, so a check that
/// came after the first build would fail with a compile error instead.
#[test]
fn unwritable_outputs_are_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let file = temp_file(dir.path(), "notes.txt", "keep");
    let under = file.join("x.yaml");
    let (under, d, f) = (
        under.to_str().unwrap(),
        dir.path().to_str().unwrap(),
        file.to_str().unwrap(),
    );
    let template = std::fs::read_to_string(crate::common::root().join("machines/template.yaml"))
        .unwrap()
        .replace("cxx: g++", "cxx: /bin/false");
    let m = temp_file(dir.path(), "m.yaml", &template);
    let m = m.to_str().unwrap();
    let hdiff = "configs/hdiff.yaml";
    let machine = crate::common::root().join("machines/default.yaml");
    let default = std::fs::read_to_string(machine).unwrap();
    let failing = temp_file(
        dir.path(),
        "default.yaml",
        &default.replace("cxx: g++", "cxx: /bin/false"),
    );
    let fm = failing.to_str().unwrap();
    let cases: [(&[&str], &str); 6] = [
        (
            &["tune", hdiff, "--machine", fm, "-o", under],
            "notes.txt is not a directory",
        ),
        (
            &["tune", hdiff, "--machine", fm, "-o", d],
            "is a directory, not a file",
        ),
        (
            &["tune", hdiff, "--machine", fm, "--plot", "x.gif"],
            "must end in .png or .svg",
        ),
        (
            &["bench", hdiff, "--machine", fm, "--plot", "x.gif"],
            "must end in .png or .svg",
        ),
        (
            &["learn", "--machine", m, "--out", under],
            "notes.txt is not a directory",
        ),
        (
            &["learn", "--machine", m, "--keep-data", f],
            "notes.txt is not a directory",
        ),
    ];
    for (args, needle) in cases {
        assert_clean_error(&absinthe(args), &[needle]);
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep");
}
