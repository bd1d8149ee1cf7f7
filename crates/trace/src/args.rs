//! Contract: `ccarena-trace --out DIR --netns PATH [--netns PATH ...] [--ports LO-HI]
//! [--bpf-stats] [--ring-kib N]`
//! parsed into `Args` (pure; the caller stats the paths). At least one `--netns`:
//! the tracer never traces the whole machine.

use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    pub out: PathBuf,
    pub netns: Vec<PathBuf>,
    pub ports: (u16, u16),
    /// Measure the program's run count and time (BPF_ENABLE_STATS while tracing).
    pub bpf_stats: bool,
    /// Ring buffer size in KiB (a power of two, >= 4; default 16384 = 16 MiB).
    pub ring_kib: u32,
}

pub const DEFAULT_RING_KIB: u32 = 16 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    Run(Args),
    Help,
    Version,
}

pub fn parse_ports(s: &str) -> Result<(u16, u16), String> {
    let (a, b) = match s.split_once('-') {
        Some((a, b)) => (a, b),
        None => (s, s),
    };
    let lo: u16 = a.trim().parse().map_err(|_| format!("{s:?}: expected PORT or LO-HI (0..65535)"))?;
    let hi: u16 = b.trim().parse().map_err(|_| format!("{s:?}: expected PORT or LO-HI (0..65535)"))?;
    if lo > hi {
        return Err(format!("{s:?}: {lo} > {hi}"));
    }
    Ok((lo, hi))
}

/// Err((argument, reason)).
pub fn parse(args: &[String]) -> Result<Parsed, (String, String)> {
    let mut out = None;
    let mut netns = Vec::new();
    let mut ports = (0u16, 65535u16);
    let mut bpf_stats = false;
    let mut ring_kib = DEFAULT_RING_KIB;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let (key, inline) = match a.split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k, Some(v.to_string())),
            _ => (a, None),
        };
        let value = |i: &mut usize| -> Result<String, (String, String)> {
            if let Some(v) = &inline {
                return Ok(v.clone());
            }
            *i += 1;
            args.get(*i).cloned().ok_or_else(|| (key.to_string(), "needs a value".to_string()))
        };
        match key {
            "--out" | "-o" => out = Some(PathBuf::from(value(&mut i)?)),
            "--netns" | "-n" => netns.push(PathBuf::from(value(&mut i)?)),
            "--ports" | "-p" => ports = parse_ports(&value(&mut i)?).map_err(|e| ("--ports".to_string(), e))?,
            "--bpf-stats" => bpf_stats = true,
            "--ring-kib" => {
                let v = value(&mut i)?;
                ring_kib = match v.parse::<u32>() {
                    Ok(n) if n >= 4 && n.is_power_of_two() && n <= 1 << 20 => n,
                    _ => return Err(("--ring-kib".to_string(), format!("{v:?}: a power of two from 4 to 1048576"))),
                };
            }
            "--help" | "-h" => return Ok(Parsed::Help),
            "--version" | "-V" => return Ok(Parsed::Version),
            other => return Err((other.to_string(), "unknown argument (see --help)".to_string())),
        }
        i += 1;
    }
    let out = out.ok_or_else(|| ("--out".to_string(), "missing (see --help)".to_string()))?;
    if netns.is_empty() {
        return Err(("--netns".to_string(), "at least one is required (see --help)".to_string()));
    }
    Ok(Parsed::Run(Args { out, netns, ports, bpf_stats, ring_kib }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn full_command_line() {
        let p = parse(&v("--out /tmp/t --netns /run/netns/a --netns=/run/netns/b --ports 5000-5999")).unwrap();
        assert_eq!(
            p,
            Parsed::Run(Args {
                out: "/tmp/t".into(),
                netns: vec!["/run/netns/a".into(), "/run/netns/b".into()],
                ports: (5000, 5999),
                bpf_stats: false,
                ring_kib: DEFAULT_RING_KIB
            })
        );
    }

    #[test]
    fn ports_default_to_all_and_accept_one_port() {
        match parse(&v("--out x --netns y")).unwrap() {
            Parsed::Run(a) => assert_eq!((a.ports, a.bpf_stats), ((0, 65535), false)),
            _ => panic!(),
        }
        assert_eq!(parse_ports("5201"), Ok((5201, 5201)));
        assert!(parse_ports("6000-5000").is_err());
        assert!(parse_ports("1-70000").is_err());
        assert!(parse_ports("a-b").is_err());
    }

    #[test]
    fn errors_name_the_argument() {
        assert_eq!(parse(&v("--netns y")).unwrap_err().0, "--out");
        assert_eq!(parse(&v("--out x")).unwrap_err().0, "--netns");
        assert_eq!(parse(&v("--out x --netns y --bogus")).unwrap_err().0, "--bogus");
        assert_eq!(parse(&v("--out x --netns")).unwrap_err().0, "--netns");
        assert_eq!(parse(&v("--out x --netns y --ports 9-1")).unwrap_err().0, "--ports");
        assert_eq!(parse(&v("--out x --netns y --ring-kib 100")).unwrap_err().0, "--ring-kib");
        match parse(&v("--out x --netns y --ring-kib 4 --bpf-stats")).unwrap() {
            Parsed::Run(a) => assert_eq!((a.ring_kib, a.bpf_stats), (4, true)),
            _ => panic!(),
        }
        assert_eq!(parse(&v("-h")).unwrap(), Parsed::Help);
    }
}
