//! The Addies' uncached registers (issue 16 item 3): a program reads an Addie's counter
//! through its own window at the window's named cost, and gets the value the debug port shows.

use machine::{Machine, Options, Preset};
use monitor::addie::attached::{REGISTER_BASE, REGISTER_BYTES};
use std::cell::RefCell;
use std::rc::Rc;

/// What the program saw: the register's values (read twice, then after a store to it) and the
/// cycles one read took.
#[derive(Default, Debug)]
struct Seen {
    values: Vec<u64>,
    read_cycles: u64,
}

/// On `elan`, with `--addie-register-cycles cycles`: 2,000 write-through stores to distinct
/// words (each a write-buffer sample of Addie 0), a wait for them to reach the controller, then
/// reads of controller 0's Addie 0.
fn run(cycles: u64) -> (Seen, serde_json::Value) {
    let mut plugin = (monitor::plugin::find("addie").unwrap().new)();
    plugin
        .flag("addie-register-cycles", Some(&cycles.to_string()))
        .unwrap();
    let mut preset = Preset::builtin("elan").unwrap();
    plugin.adjust_preset(&mut preset).unwrap();
    let mut m = Machine::new(preset, Options::default()).unwrap();
    plugin.attach(&mut m).unwrap();
    let a = m.setup().alloc("data", 1 << 16, machine::Place::FirstTouch);
    let seen = Rc::new(RefCell::new(Seen::default()));
    let s = seen.clone();
    m.spawn(0, move |ctx| {
        for i in 0..2_000u64 {
            // Every third store returns to a word just written: some buffer hits.
            let w = if i % 3 == 2 { i - 1 } else { i };
            ctx.store(a + (w % 4096) * 8);
        }
        ctx.int(20_000);
        let mut s = s.borrow_mut();
        let before = ctx.cycles();
        let v = ctx.uncached(REGISTER_BASE, 8, None);
        s.read_cycles = ctx.cycles() - before;
        s.values.push(v);
        s.values.push(ctx.uncached(REGISTER_BASE, 8, None));
        ctx.uncached(REGISTER_BASE, 8, Some(12345));
        s.values.push(ctx.uncached(REGISTER_BASE, 8, None));
        // Addie 1 of controller 0 (read-buffer hits of the line fills).
        s.values
            .push(ctx.uncached(REGISTER_BASE + REGISTER_BYTES, 8, None));
    });
    m.run(None).unwrap();
    let j = plugin.json(&m).unwrap();
    (Rc::try_unwrap(seen).unwrap().into_inner(), j)
}

#[test]
fn a_program_reads_an_addie_register_at_its_named_cost() {
    let (cheap, j) = run(12);
    let (dear, j2) = run(412);
    let addie0 = &j["controllers"][0]["addies"][0];
    let counter = addie0["counter"].as_u64().unwrap();
    // The register holds the counter the debug port reports (no request came after the reads).
    assert!(addie0["samples"].as_u64().unwrap() >= 2_000, "{addie0}");
    assert_eq!(
        cheap.values[..3],
        [counter; 3],
        "a store to the register changes nothing"
    );
    let addie1 = &j["controllers"][0]["addies"][1];
    assert_eq!(
        cheap.values[3],
        addie1["counter"].as_u64().unwrap(),
        "{addie1}"
    );
    assert_eq!(j["registers"]["reads"], 4);
    assert_eq!(j["registers"]["cycles"], 12);
    assert_eq!(j2["registers"]["cycles"], 412);
    // The same run but for the cost: the same counter, and each read 400 cycles dearer.
    assert_eq!(dear.values, cheap.values);
    assert_eq!(
        dear.read_cycles - cheap.read_cycles,
        400,
        "{cheap:?} {dear:?}"
    );
    assert!(cheap.read_cycles >= 12);
}

#[test]
fn a_bad_register_cost_is_refused_by_name() {
    let mut plugin = (monitor::plugin::find("addie").unwrap().new)();
    let e = plugin
        .flag("addie-register-cycles", Some("lots"))
        .unwrap_err();
    assert_eq!(e.code, 2);
    assert!(e.msg.contains("--addie-register-cycles lots"), "{}", e.msg);
}
