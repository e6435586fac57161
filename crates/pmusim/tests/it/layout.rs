//! The workspace's layout rules that a reviewer would otherwise check by hand.

use std::path::Path;

/// Each crate has at most one integration-test binary (issue 13 item 8): every test file of a
/// binary links the whole crate graph again, which on 2 cores costs more than running them.
/// A crate's test targets are the `tests/*.rs` files and the `tests/*/main.rs` directories.
#[test]
fn each_crate_has_at_most_one_integration_test_binary() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut offenders = Vec::new();
    for krate in std::fs::read_dir(&crates).unwrap() {
        let tests = krate.unwrap().path().join("tests");
        let Ok(entries) = std::fs::read_dir(&tests) else {
            continue;
        };
        let targets: Vec<String> = entries
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "rs") || p.join("main.rs").is_file())
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        if targets.len() > 1 {
            offenders.push(format!("{}: {targets:?}", tests.display()));
        }
    }
    assert!(
        offenders.is_empty(),
        "more than one integration-test binary (move them into tests/it/ as modules of \
         tests/it/main.rs): {offenders:?}"
    );
}
