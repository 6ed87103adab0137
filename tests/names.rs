//! The names of a program (its own, its arrays', scalars' and locals') never meet the names the
//! generated code makes for itself: programs chosen to collide build and verify bit for bit.

use crate::common::{absinthe, stderr, stdout, temp_file};

/// A program whose kernel name starts like the identifiers made from its arrays (`a_` for an
/// input's parameter, `sc_` for a scalar, `l0_` for a step's local), or named like the harness's
/// own helpers, each with a name that would complete the collision.
#[test]
fn programs_named_like_generated_identifiers_build_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        // The input's parameter `a_kernel_g0_s0_loop_x` was the loop-bound table's name.
        ("a", "", "", "kernel_g0_s0_loop_x(i,j,k) * 2.0"),
        // The scalar's parameter `sc_kernel` was the kernel function's name.
        ("sc", "scalars: [kernel]\n", "", "kernel * u(i,j,k)"),
        // Stencil 0's local `l0_kernel` likewise.
        (
            "l0",
            "",
            "    let:\n      kernel: \"u(i,j,k) + 1.0\"\n",
            "kernel * kernel",
        ),
        // The harness's timing lambda was `run_kernel`.
        ("run", "", "", "u(i,j,k) + 1.0"),
    ];
    for (name, scalars, lets, expr) in cases {
        let text = format!(
            "name: {name}\ndomain: [16, 8, 4]\nhalo: [1, 1, 0]\n{scalars}outputs: [o]\nstencils:\n  - name: o\n{lets}    expr: \"{expr}\"\n"
        );
        let p = temp_file(dir.path(), &format!("{name}.yaml"), &text);
        let o = absinthe(&[
            "bench",
            p.to_str().unwrap(),
            "--variants",
            "opt",
            "--runs",
            "2",
            "--no-roofline",
            "--flush-bytes",
            "0",
            "--format",
            "json",
        ]);
        assert!(o.status.success(), "{name}: {}\n{}", stderr(&o), stdout(&o));
        let rows: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
        assert!(
            !rows.is_empty() && rows.iter().all(|r| r["verified"] == true),
            "{name}: {}",
            stdout(&o)
        );
    }
}

#[test]
fn kernel_names_never_start_like_a_programs_names() {
    use absinthe_codegen::schedule::kernel_name;
    for (program, kernel) in [
        ("hdiff", "hdiff_kernel"),
        ("cosmo_adv5_256", "cosmo_adv5_256_kernel"),
        ("a", "p_a_kernel"),
        ("sc", "p_sc_kernel"),
        ("r_x", "p_r_x_kernel"),
        ("l12", "p_l12_kernel"),
        ("l", "p_l_kernel"),
        ("lap", "lap_kernel"),
        ("run", "run_kernel"),
        ("3d", "p_3d_kernel"),
        ("", "p__kernel"),
        ("x-y", "x_y_kernel"),
    ] {
        assert_eq!(kernel_name(program), kernel, "{program}");
    }
}
