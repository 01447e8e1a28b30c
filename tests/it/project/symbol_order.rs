//! `make symbol-order`'s reading of callgrind and lld's link map (hack/symbol-order.py), and
//! the list it wrote (link/symbol-order.txt, which build.rs hands to lld).

use crate::support::root;
use std::process::Command;

/// lld's map: a hot function, a cold one only called into, assembly in a plain `.text` (named
/// by its symbol), and a function that never ran.
const MAP: &str = "\
             VMA              LMA     Size Align Out     In      Symbol
          401000           401000      400    64 .text
          401000           401000      100    16         /t/a.o:(.text._ZN3foo3hot17h0000000000000001E)
          401000           401000      100     1                 foo::hot::h0000000000000001
          401100           401100      100    16         /t/a.o:(.text.unlikely._ZN3foo4cold17h0000000000000002E)
          401100           401100      100     1                 foo::cold::h0000000000000002
          401200           401200      100    16         /t/libx.a(x.o):(.text)
          401200           401200        0     1                 asm_fn
          401300           401300      100    16         /t/a.o:(.text._ZN3foo6unused17h0000000000000003E)
          401300           401300      100     1                 foo::unused::h0000000000000003
";

/// callgrind with instruction positions: the call's line after `calls=` is its inclusive cost
/// (not the caller's own), and addresses of another object do not count.
const RUN: &str = "\
ob=/x/image-reflector
fn=0x401000
0x401000 50
0x401010 50
cob=/x/image-reflector
cfn=0x401100
calls=1 0x401100
0x401020 5000
fn=0x401200
0x401200 10
ob=/lib/x86_64-linux-gnu/libc.so.6
fn=0x401300
0x401300 999
";

/// An idle controller's run: only the cold function.
const IDLE: &str = "\
ob=/x/image-reflector
fn=0x401100
0x401100 3
";

/// The generator's list for these runs (`--idle` first when given).
fn order(idle: bool) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);
    std::fs::write(path("link.map"), MAP).unwrap();
    std::fs::write(path("callgrind.1"), RUN).unwrap();
    std::fs::write(path("idle.callgrind"), IDLE).unwrap();
    let mut command = Command::new("python3");
    command
        .arg(root().join("hack/symbol-order.py"))
        .args([path("link.map"), path("order.txt")]);
    if idle {
        command.arg("--idle").arg(path("idle.callgrind"));
    }
    let status = command
        .arg(path("callgrind.1"))
        .status()
        .expect("python3 runs");
    assert!(status.success());
    let text = std::fs::read_to_string(path("order.txt")).unwrap();
    let names = text.lines().filter(|l| !l.starts_with('#'));
    names.map(str::to_string).collect()
}

#[test]
fn the_generator_orders_what_ran_by_its_own_instructions() {
    assert_eq!(
        order(false),
        [
            "_ZN3foo3hot17h0000000000000001E",
            "asm_fn",
            "_ZN3foo4cold17h0000000000000002E"
        ]
    );
}

#[test]
fn what_an_idle_controller_runs_comes_first() {
    assert_eq!(
        order(true),
        [
            "_ZN3foo4cold17h0000000000000002E",
            "_ZN3foo3hot17h0000000000000001E",
            "asm_fn"
        ]
    );
}

/// Missing runs, or `--idle` without its file: the usage, not a traceback.
#[test]
fn the_generator_refuses_what_is_not_its_usage() {
    for args in [
        &["map", "out"][..],
        &["map", "out", "--idle", "idle.cg"],
        &["--check", "map", "list"],
    ] {
        let run = Command::new("python3")
            .arg(root().join("hack/symbol-order.py"))
            .args(args)
            .output()
            .expect("python3 runs");
        assert!(!run.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(
            stderr.starts_with("usage: hack/symbol-order.py"),
            "{args:?}: {stderr}"
        );
    }
}

/// `--check LINK_MAP LIST EXECUTABLE`'s line, with `executable` a hard link of `linked` (the
/// file a map names as its link's output, `deps/image_reflector-<hash>`) when both are given.
fn check(map: &str, list: &[&str], linked: Option<&str>, executable: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);
    std::fs::create_dir(path("deps")).unwrap();
    std::fs::write(path("exe"), "").unwrap();
    if let Some(linked) = linked {
        std::fs::hard_link(path("exe"), path(linked)).unwrap();
    }
    let deps = path("deps").to_string_lossy().into_owned();
    std::fs::write(path("link.map"), map.replace("DEPS", &deps)).unwrap();
    std::fs::write(
        path("list.txt"),
        format!("# a comment\n{}\n", list.join("\n")),
    )
    .unwrap();
    let run = Command::new("python3")
        .arg(root().join("hack/symbol-order.py"))
        .arg("--check")
        .args([path("link.map"), path("list.txt"), path(executable)])
        .output()
        .expect("python3 runs");
    assert!(run.status.success(), "{run:?}");
    String::from_utf8(run.stdout).unwrap()
}

const HOT: &str = "_ZN3foo3hot17h0000000000000001E";
const COLD: &str = "_ZN3foo4cold17h0000000000000002E";

/// After a dependency or toolchain update the list's names are gone from the build: lld skips
/// them silently, the check says so.
#[test]
fn the_check_says_when_the_list_is_stale() {
    let all = check(MAP, &[HOT, COLD, "asm_fn"], None, "exe");
    assert!(
        all.contains("3 of its 3 functions are in this build\n"),
        "{all}"
    );
    assert!(!all.contains("stale"), "{all}");
    let gone = "_ZN3foo3hot17h00000000000000ffE";
    let stale = check(MAP, &[HOT, gone, COLD, "asm_fn"], None, "exe");
    assert!(
        stale.contains("3 of its 4 functions are in this build (75%)"),
        "{stale}"
    );
    assert!(stale.contains("`make symbol-order`"), "{stale}");
}

/// A benchmark's build of the bin writes the same map with its own symbols: a map that names
/// another output than the executable is not read as the executable's.
#[test]
fn the_check_reads_only_the_executables_own_map() {
    let bin_object = format!(
        "          401400           401400      100    16         \
         DEPS/image_reflector-0123abcd.image_reflector.f00-cgu.0.rcgu.o:(.text.{HOT})\n"
    );
    let map = format!("{MAP}{bin_object}");
    let own = check(&map, &[HOT], Some("deps/image_reflector-0123abcd"), "exe");
    assert!(
        own.contains("1 of its 1 functions are in this build"),
        "{own}"
    );
    let other = check(&map, &[HOT], Some("deps/image_reflector-99999999"), "exe");
    assert!(other.contains("not checked"), "{other}");
    assert!(other.contains("image_reflector-0123abcd"), "{other}");
}

#[test]
fn the_committed_list_names_the_controllers_own_functions() {
    let text = std::fs::read_to_string(root().join("link/symbol-order.txt")).unwrap();
    let names: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(names.len() > 1000, "{} names", names.len());
    // The reconcilers' code is in it, not only the runtime's.
    assert!(names
        .iter()
        .any(|n| n.contains("15image_reflector10controller")));
    assert!(names.iter().any(|n| n.contains("15image_reflector5store")));
}
