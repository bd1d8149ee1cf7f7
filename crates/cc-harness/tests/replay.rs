//! The default variant of each converted algorithm against Linux's own module, call by
//! call: traces recorded in the reference kernel (traces/<algorithm>/<scenario>.csv.gz,
//! `make cc-traces`) replayed through our BPF program (ccarena_cc_harness::replay,
//! docs/dev/cc-replay.md). Every compared value must be identical.
use ccarena_cc_harness::replay::{assert_replays, replay, Options};
use ccarena_cc_harness::trace::Trace;

macro_rules! replays {
    ($algo:literal: $($scenario:ident),*) => {
        $(
            #[test]
            fn $scenario() {
                assert_replays($algo, stringify!($scenario), $algo);
            }
        )*
    };
}

mod reno {
    use super::*;
    replays!("reno": bulk, nosack, rto, reorder, idle, stretch);
}

mod scalable {
    use super::*;
    replays!("scalable": bulk, nosack, rto, reorder, idle, stretch);
}

mod bic {
    use super::*;
    replays!("bic": bulk, nosack, rto, reorder, idle, stretch);
}

mod highspeed {
    use super::*;
    replays!("highspeed": bulk, nosack, rto, reorder, idle, stretch, deepq);
}

mod vegas {
    use super::*;
    replays!("vegas": bulk, nosack, rto, reorder, idle, stretch);
}

mod hybla {
    use super::*;
    replays!("hybla": bulk, nosack, rto, reorder, idle, stretch);
}

mod veno {
    use super::*;
    replays!("veno": bulk, nosack, rto, reorder, idle, stretch);
}

mod htcp {
    use super::*;
    replays!("htcp": bulk, nosack, rto, reorder, idle, stretch);
}

mod illinois {
    use super::*;
    replays!("illinois": bulk, nosack, rto, reorder, idle, stretch);
}

mod yeah {
    use super::*;
    replays!("yeah": bulk, nosack, rto, reorder, idle, stretch, deepq);
}

mod lp {
    use super::*;
    replays!("lp": bulk, nosack, rto, reorder, idle, stretch);
}

mod cubic {
    use super::*;
    replays!("cubic": bulk, nosack, rto, reorder, idle, stretch);
}

mod westwood {
    use super::*;
    replays!("westwood": bulk, nosack, rto, reorder, idle, stretch);
}

mod dctcp {
    use super::*;
    replays!("dctcp": bulk, nosack, rto, reorder, idle, stretch, ecn);
}

/// The replay can tell algorithms apart: the papers' variants, which differ from Linux's
/// rules, diverge on the same traces (so an identical replay is a finding, not a harness
/// that compares nothing).
#[test]
fn the_paper_variants_diverge_from_linux_on_the_same_traces() {
    for (algo, variant) in [("bic", "bic:paper"), ("scalable", "scalable:paper"), ("highspeed", "highspeed:paper"), ("vegas", "vegas:paper"), ("hybla", "hybla:paper"), ("veno", "veno:paper"), ("yeah", "yeah:paper"), ("htcp", "htcp:paper"), ("illinois", "illinois:paper"), ("lp", "lp:paper"), ("cubic", "cubic:paper"), ("westwood", "westwood:paper"), ("dctcp", "dctcp:paper")] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces").join(algo).join("bulk.csv.gz");
        let trace = Trace::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let rep = replay(&trace, variant, Options::default());
        assert!(!rep.divergences.is_empty(), "{}", rep.summary(variant));
    }
}

/// An algorithm with an op its Linux module lacks is refused: the trace never feeds it.
#[test]
fn an_op_the_module_lacks_is_found() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/reno/bulk.csv.gz");
    let trace = Trace::load(&path).unwrap_or_else(|e| panic!("{e}"));
    // Linux's reno has no pkts_acked; our BIC has one (Linux's tcp_bic does)
    assert_eq!(ccarena_cc_harness::replay::unfed_ops(&trace, &ccarena_cc_harness::Conn::bare("bic")), vec!["pkts_acked"]);
    assert!(ccarena_cc_harness::replay::unfed_ops(&trace, &ccarena_cc_harness::Conn::bare("reno")).is_empty());
}
