//! What the link reports about itself: statistics intervals (the last one closed by
//! `finish`), the merged event log, totals, packets in flight, the delay line's memory
//! bound, and losses before the queue.

use super::*;

const TX_1514_AT_10M: u64 = 1514 * 8 * 1_000_000_000 / 10_000_000;

#[test]
fn finish_closes_the_partial_interval_with_the_occupancy_at_exit() {
    let mut link = Link::new(
        &params(DirParams::simple(
            RateSpec::Constant(10_000_000),
            0,
            Limit::packets(100),
        )),
        0,
    );
    for _ in 0..20 {
        link.enqueue(0, W2E, pkt(1514, 1));
    }
    let mut out = Vec::new();
    assert_eq!(
        link.next_stats_ns(),
        10_000_000,
        "the first interval ends one interval in"
    );
    link.poll(12_000_000, &mut out);
    assert_eq!(link.next_stats_ns(), 20_000_000);
    link.finish(15_000_000);
    let recs: Vec<_> = link.drain_stats().collect();
    let t: Vec<(u64, u8)> = recs.iter().map(|r| (r.t_ns, r.dir)).collect();
    assert_eq!(
        t,
        vec![
            (10_000_000, 0),
            (10_000_000, 1),
            (15_000_000, 0),
            (15_000_000, 1)
        ]
    );
    // A frame leaves the queue when its transmission starts: by t, floor(t/tx) + 1 frames.
    let started = |t: u64| t / TX_1514_AT_10M + 1;
    let (first, last) = (&recs[0], &recs[2]);
    assert_eq!(first.arrivals, 20);
    assert_eq!(first.departures as u64, started(10_000_000));
    assert_eq!(first.bytes_out, started(10_000_000) * 1514);
    assert_eq!(first.qlen_pkts as u64, 20 - started(10_000_000));
    assert_eq!(last.arrivals, 0);
    assert_eq!(
        last.departures as u64,
        started(15_000_000) - started(10_000_000)
    );
    assert_eq!(last.qlen_pkts as u64, 20 - started(15_000_000));
    assert_eq!(last.qlen_bytes, (20 - started(15_000_000)) * 1514);
    assert!(recs[1].arrivals == 0 && recs[3].departures == 0);
    assert_eq!(link.drain_stats().count(), 0, "drained once");
    let tot = link.totals(W2E);
    assert_eq!(tot.departures, started(15_000_000));
    assert_eq!(tot.bytes_in, 20 * 1514);
    assert_eq!(
        link.queue_len(W2E),
        (
            (20 - started(15_000_000)) as usize,
            (20 - started(15_000_000)) * 1514
        )
    );
}

#[test]
fn the_event_log_merges_both_directions_in_time_order() {
    let mut p = params(DirParams::simple(
        RateSpec::Unlimited,
        1_000,
        Limit::packets(10),
    ));
    p.event_log = true;
    let mut link = Link::new(&p, 0);
    link.enqueue(5, W2E, pkt(100, 1));
    link.enqueue(7, E2W, pkt(200, 2));
    link.enqueue(9, W2E, pkt(300, 3));
    let mut ev = Vec::new();
    link.drain_events(&mut ev);
    let got: Vec<(u64, u8, u8, u32)> = ev.iter().map(|e| (e.t_ns, e.dir, e.ev, e.size)).collect();
    use ccarena_link::stats::{EV_DEQ, EV_ENQ};
    assert_eq!(
        got,
        vec![
            (5, 0, EV_ENQ, 100),
            (5, 0, EV_DEQ, 100),
            (7, 1, EV_ENQ, 200),
            (7, 1, EV_DEQ, 200),
            (9, 0, EV_ENQ, 300),
            (9, 0, EV_DEQ, 300),
        ]
    );
    let mut again = Vec::new();
    link.drain_events(&mut again);
    assert!(again.is_empty());
}

#[test]
fn packets_in_the_delay_line_are_in_flight_until_released() {
    let mut link = Link::new(
        &params(DirParams::simple(
            RateSpec::Unlimited,
            10_000_000,
            Limit::packets(10),
        )),
        0,
    );
    for _ in 0..3 {
        link.enqueue(0, W2E, pkt(100, 1));
    }
    assert_eq!((link.in_flight(W2E), link.in_flight(E2W)), (3, 0));
    let mut out = Vec::new();
    link.poll(10_000_000 - 1, &mut out);
    assert_eq!((out.len(), link.totals(W2E).released), (0, 0));
    link.poll(10_000_000, &mut out);
    assert_eq!(
        (out.len(), link.in_flight(W2E), link.totals(W2E).released),
        (3, 0, 3)
    );
    assert_eq!(link.next_deadline(), None);
}

#[test]
fn the_delay_line_refuses_what_exceeds_its_memory_bound() {
    let mut p = params(DirParams::simple(
        RateSpec::Unlimited,
        10_000_000,
        Limit::packets(10),
    ));
    p.delay_line_bytes = Some(3_000);
    let mut link = Link::new(&p, 0);
    for _ in 0..5 {
        link.enqueue(0, W2E, pkt(1000, 1));
    }
    assert_eq!(link.in_flight(W2E), 3);
    assert_eq!(link.totals(W2E).drops_delay_line, 2);
    let mut out = Vec::new();
    run_until(&mut link, 0, u64::MAX / 2, &mut out);
    assert_eq!(out.len(), 3);
    // Releasing one of three packets frees exactly its bytes: one more fits, not two.
    link.enqueue(20_000_000, W2E, pkt(1000, 1));
    link.enqueue(25_000_000, W2E, pkt(1000, 1));
    link.enqueue(25_000_000, W2E, pkt(1000, 1));
    link.poll(30_000_000, &mut out);
    assert_eq!((out.len(), link.in_flight(W2E)), (4, 2));
    link.enqueue(30_000_000, W2E, pkt(1000, 1));
    link.enqueue(30_000_000, W2E, pkt(1000, 1));
    assert_eq!(link.in_flight(W2E), 3);
    assert_eq!(link.totals(W2E).drops_delay_line, 3);
}

#[test]
fn per_host_and_link_loss_drop_before_the_queue() {
    let mut p = params(DirParams::simple(
        RateSpec::Unlimited,
        0,
        Limit::packets(100),
    ));
    p.hosts = vec![HostRule {
        ip: u32::from_be_bytes([10, 1, 1, 2]),
        delay_ns: 0,
        loss: Some(LossModel::Bernoulli { p: 1.0 }),
    }];
    p.dirs[1].loss = Some(LossModel::Bernoulli { p: 1.0 });
    let mut link = Link::new(&p, 0);
    let other = |sport| {
        Packet::from_frame(&build_ipv4_frame(
            100,
            [10, 3, 1, 2],
            [10, 4, 1, 2],
            17,
            sport,
            2,
            0,
        ))
    };
    for i in 0..10 {
        link.enqueue(i, W2E, pkt(100, 1)); // from the lossy host: lost
        link.enqueue(i, W2E, other(2)); // no rule: passes
        link.enqueue(i, E2W, other(3)); // lossy direction: lost
    }
    let (w, e) = (link.totals(W2E), link.totals(E2W));
    assert_eq!((w.arrivals, w.drops_loss, w.departures), (20, 10, 10));
    assert_eq!((e.arrivals, e.drops_loss, e.departures), (10, 10, 0));
}

#[test]
fn an_idle_link_has_no_deadline() {
    for rate in [
        RateSpec::Unlimited,
        RateSpec::Constant(1_000_000),
        RateSpec::Trace {
            opportunities_ms: vec![1, 2],
        },
    ] {
        let mut link = Link::new(
            &params(DirParams::simple(rate.clone(), 0, Limit::packets(10))),
            0,
        );
        assert_eq!(link.next_deadline(), None, "{rate:?}");
        link.enqueue(0, W2E, pkt(100, 1));
        let mut out = Vec::new();
        run_until(&mut link, 0, u64::MAX / 2, &mut out);
        assert_eq!(out.len(), 1, "{rate:?}");
        assert_eq!(link.next_deadline(), None, "{rate:?}");
    }
}

#[test]
fn the_default_delay_line_bound_holds_rate_times_delay_for_every_rate_spec() {
    // Without `delay_line_bytes` the bound is derived from the peak rate and the longest
    // delay: a backlogged 1 Gbit/s link with 100 ms of delay has 12.5 MB in flight (more
    // than the 4 MiB of slack), all of which must fit.
    let g = 1_000_000_000;
    let specs = [
        RateSpec::Constant(g),
        RateSpec::Schedule {
            initial: Some(g / 10),
            steps: vec![(0, Some(g)), (10_000_000_000, Some(g / 10))],
        },
        // 84 opportunities of 1500 bytes per ms ≈ 1 Gbit/s.
        RateSpec::Trace {
            opportunities_ms: vec![1; 84],
        },
    ];
    for spec in specs {
        let mut link = Link::new(
            &params(DirParams::simple(
                spec.clone(),
                100_000_000,
                Limit::packets(20_000),
            )),
            0,
        );
        for _ in 0..9_000 {
            link.enqueue(0, W2E, pkt(1514, 1));
        }
        let mut out = Vec::new();
        run_until(&mut link, 0, u64::MAX / 2, &mut out);
        let t = link.totals(W2E);
        assert_eq!((t.drops_delay_line, out.len()), (0, 9_000), "{spec:?}");
    }
}
