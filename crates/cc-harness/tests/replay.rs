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
