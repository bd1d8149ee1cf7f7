//! Contract: read a trace written by ccarena-cc-record (docs/dev/cc-replay.md, "The trace
//! format"): gzip-compressed text, `# key value` header lines, one CSV line naming the
//! columns, one line per record. Columns are found by name, so a recorder that adds a
//! column does not break this reader; a missing column is an error naming it.
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The columns before the socket snapshot.
const FIXED: &[&str] = &["kind", "conn", "t_ns", "jiffies", "a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "ret"];

#[derive(Debug)]
pub enum TraceError {
    Read(PathBuf, String),
    Format(PathBuf, usize, String),
}

impl std::fmt::Display for TraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TraceError::Read(p, e) => write!(f, "read trace {}: {e}", p.display()),
            TraceError::Format(p, line, e) => write!(f, "{}:{line}: {e}", p.display()),
        }
    }
}

/// One record of a trace.
#[derive(Clone, Debug)]
pub struct Rec {
    /// line number in the decompressed file (for messages)
    pub line: usize,
    pub kind: String,
    pub conn: u32,
    pub t_ns: u64,
    pub jiffies: u64,
    pub a: [i64; 8],
    pub ret: i64,
    /// the socket snapshot, in `Trace::fields` order
    pub snap: Vec<u64>,
}

pub struct Trace {
    pub path: PathBuf,
    /// `# key value` header lines (the first word is the key)
    pub header: BTreeMap<String, String>,
    /// the snapshot's column names
    pub fields: Vec<String>,
    pub recs: Vec<Rec>,
}

impl Trace {
    pub fn load(path: &Path) -> Result<Trace, TraceError> {
        let f = std::fs::File::open(path).map_err(|e| TraceError::Read(path.into(), e.to_string()))?;
        let mut text = String::new();
        flate2::read::GzDecoder::new(f)
            .read_to_string(&mut text)
            .map_err(|e| TraceError::Read(path.into(), e.to_string()))?;
        Trace::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<Trace, TraceError> {
        let err = |n: usize, e: String| TraceError::Format(path.into(), n, e);
        let mut header = BTreeMap::new();
        let mut cols: Option<Vec<String>> = None;
        let mut recs = Vec::new();
        for (i, l) in text.lines().enumerate() {
            let n = i + 1;
            if let Some(h) = l.strip_prefix("# ") {
                let (k, v) = h.split_once(' ').unwrap_or((h, ""));
                header.insert(k.to_string(), v.to_string());
                continue;
            }
            let Some(c) = &cols else {
                let c: Vec<String> = l.split(',').map(String::from).collect();
                if c.len() < FIXED.len() || c[..FIXED.len()].iter().zip(FIXED).any(|(a, b)| a != b) {
                    return Err(err(n, format!("column line must start with {}", FIXED.join(","))));
                }
                cols = Some(c);
                continue;
            };
            let v: Vec<&str> = l.split(',').collect();
            if v.len() != c.len() {
                return Err(err(n, format!("{} values for {} columns", v.len(), c.len())));
            }
            let num = |j: usize| -> Result<i64, TraceError> {
                v[j].parse::<i64>()
                    .or_else(|_| v[j].parse::<u64>().map(|u| u as i64))
                    .map_err(|_| err(n, format!("column {}: {:?} is not a number", c[j], v[j])))
            };
            let mut a = [0i64; 8];
            for (k, x) in a.iter_mut().enumerate() {
                *x = num(4 + k)?;
            }
            let mut snap = Vec::with_capacity(c.len() - FIXED.len());
            for j in FIXED.len()..c.len() {
                snap.push(num(j)? as u64);
            }
            recs.push(Rec {
                line: n,
                kind: v[0].to_string(),
                conn: num(1)? as u32,
                t_ns: num(2)? as u64,
                jiffies: num(3)? as u64,
                a,
                ret: num(12)?,
                snap,
            });
        }
        let cols = cols.ok_or_else(|| err(0, "no column line".into()))?;
        if header.get("ccarena-cc-trace").map(String::as_str) != Some("1") {
            return Err(err(1, "not a ccarena-cc-trace 1 file (first line `# ccarena-cc-trace 1`)".into()));
        }
        Ok(Trace { path: path.into(), header, fields: cols[FIXED.len()..].to_vec(), recs })
    }

    /// The index of snapshot field `name` (panics naming the trace if it has none).
    pub fn field(&self, name: &str) -> usize {
        self.fields
            .iter()
            .position(|f| f == name)
            .unwrap_or_else(|| panic!("{}: no column {name:?}", self.path.display()))
    }

    /// The kernel's tick rate the trace was recorded at (`# hz`).
    pub fn hz(&self) -> u32 {
        self.header.get("hz").and_then(|h| h.parse().ok()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COLS: &str = "kind,conn,t_ns,jiffies,a0,a1,a2,a3,a4,a5,a6,a7,ret,cwnd,ssthresh";

    #[test]
    fn a_trace_parses_with_its_header_and_columns() {
        let t = format!("# ccarena-cc-trace 1\n# hz 250\n# scenario x: y z\n{COLS}\ncc_pre,0,5,7,1,2,3,-1,0,0,0,0,9,10,2147483647\n");
        let tr = Trace::parse(Path::new("t"), &t).unwrap();
        assert_eq!(tr.hz(), 250);
        assert_eq!(tr.header["scenario"], "x: y z");
        assert_eq!(tr.recs.len(), 1);
        let r = &tr.recs[0];
        assert_eq!((r.kind.as_str(), r.t_ns, r.jiffies, r.a[3], r.ret), ("cc_pre", 5, 7, -1, 9));
        assert_eq!(r.snap[tr.field("ssthresh")], 2147483647);
    }

    #[test]
    fn a_short_line_or_a_foreign_file_is_an_error_naming_the_line() {
        let t = format!("# ccarena-cc-trace 1\n{COLS}\ncc_pre,0,5\n");
        let e = Trace::parse(Path::new("t"), &t).err().unwrap().to_string();
        assert!(e.contains("t:3"), "{e}");
        let e = Trace::parse(Path::new("t"), &format!("{COLS}\n")).err().unwrap().to_string();
        assert!(e.contains("ccarena-cc-trace"), "{e}");
    }
}
