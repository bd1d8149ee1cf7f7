//! The harness itself: every bpf/cc algorithm is built and callable, with the ops the
//! contract of cca_common.h asks for.
use ccarena_cc_harness::*;

#[test]
fn every_algorithm_is_built_with_the_contract_ops() {
    assert!(ALGOS.len() >= 14, "{ALGOS:?}");
    for a in ALGOS {
        let c = Conn::new(a);
        assert_eq!(c.ops_name(), format!("cca_{a}"));
        for op in [Op::Ssthresh, Op::CongControl, Op::UndoCwnd, Op::SetState] {
            assert!(c.has_op(op), "{a}: no {op:?}");
        }
        assert!(!c.has_op(Op::CongAvoid), "{a}: cong_control algorithms have no cong_avoid");
        // a few rounds of slow start and one loss must leave a sane window
        c.set_ssthresh(30);
        for _ in 0..5 {
            c.round(20_000);
        }
        assert!(c.cwnd() >= 20 && c.cwnd() < 200, "{a}: cwnd {}", c.cwnd());
        c.enter_recovery();
        let ss = c.ssthresh();
        assert!(ss >= 2 && ss <= c.get(Field::PriorCwnd) as u32, "{a}: ssthresh {ss}");
        c.exit_reduction();
        assert_eq!(c.cwnd(), ss, "{a}: recovery ends at ssthresh");
    }
}

#[test]
fn the_fake_clock_is_per_thread_and_drives_bpf_ktime() {
    set_now_us(5_000_000);
    advance_us(250);
    assert_eq!(now_us(), 5_000_250);
    std::thread::spawn(|| assert_eq!(now_us(), 1_000_000)).join().unwrap();
}

#[test]
fn the_guard_repairs_a_corrupted_ssthresh_before_use() {
    // cca_common.h CCA_CHECK: a ssthresh of 0x81104110 (the kernel fault) is replaced
    // by the algorithm's rule for prior_cwnd at the next cong_control, counted at_entry
    let c = Conn::new("reno");
    c.start_in_ca(40);
    c.set(Field::PriorCwnd, 40);
    c.set_ssthresh(0x8110_4110);
    c.set_ca_state(RECOVERY);
    c.cong_control(FLAG_DATA_ACKED, 1, 0, 20_000);
    assert_eq!(c.ssthresh(), 20);
    assert_eq!(c.guard_counts()[1], 1, "counted at entry");
    assert_eq!(c.guard_counts()[0], 0, "not late");
}
