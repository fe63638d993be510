//! The runner: tries a target's corpus, then mutations of it, each input on
//! a worker thread under a time limit, and counts what happened. A panic
//! or a refusal that does not name its file is recorded with its input; a
//! hang (no answer within the limit) is recorded and ends the target, since
//! a stuck thread cannot be stopped.

use std::collections::HashSet;
use std::path::Path;
use std::sync::mpsc;
use std::sync::Once;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::mutate;
use crate::targets::{Outcome, Target};

/// How long and how hard to fuzz one target.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Stop after this many inputs (corpus included).
    pub inputs: Option<u64>,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// An input that takes longer is a hang.
    pub per_input: Duration,
    pub seed: u64,
}

/// An input that broke the contract.
#[derive(Debug, Clone)]
pub struct Failure {
    pub input: Vec<u8>,
    pub message: String,
}

/// What fuzzing one target found.
#[derive(Debug, Default)]
pub struct Report {
    pub target: String,
    pub tried: u64,
    pub accepted: u64,
    pub refused: u64,
    pub panics: Vec<Failure>,
    pub hangs: Vec<Failure>,
    pub unnamed: Vec<Failure>,
    /// Inputs whose outcome no earlier input had (worth keeping in the corpus).
    pub novel: Vec<Vec<u8>>,
    /// The slowest input's time.
    pub slowest: Duration,
}

impl Report {
    pub fn clean(&self) -> bool {
        self.panics.is_empty() && self.hangs.is_empty() && self.unnamed.is_empty()
    }
}

/// Threads named so are fuzz workers: their panics are expected and counted,
/// not printed.
const WORKER: &str = "lockstep-fuzz-worker";

fn quiet_worker_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() != Some(WORKER) {
                default(info);
            }
        }));
    });
}

type Answer = Result<Outcome, String>;

/// A worker thread running inputs of one target.
struct Worker {
    send: mpsc::Sender<Vec<u8>>,
    answers: mpsc::Receiver<Answer>,
}

impl Worker {
    fn start(run: fn(&[u8]) -> Outcome) -> Option<Worker> {
        let (send, inputs) = mpsc::channel::<Vec<u8>>();
        let (reply, answers) = mpsc::channel();
        std::thread::Builder::new()
            .name(WORKER.into())
            .spawn(move || {
                for input in inputs {
                    let answer = std::panic::catch_unwind(|| run(&input))
                        .map_err(|payload| panic_message(payload.as_ref()));
                    if reply.send(answer).is_err() {
                        break;
                    }
                }
            })
            .ok()?;
        Some(Worker { send, answers })
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".to_string())
}

/// An outcome with the parts that vary with the input (numbers, quoted
/// text) blanked, so that "new outcome" means a new kind of answer.
fn signature(outcome: &Outcome) -> String {
    let (kind, text) = match outcome {
        Outcome::Accepted => return "accepted".into(),
        Outcome::Refused(m) => ("refused", m),
        Outcome::Unnamed(m) => ("unnamed", m),
    };
    let mut out = String::from(kind);
    let mut quoted = false;
    for c in text.chars().take(200) {
        match c {
            '`' | '"' | '\'' => quoted = !quoted,
            _ if quoted => {}
            '0'..='9' => {
                if !out.ends_with('N') {
                    out.push('N')
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// Fuzzes `target`: every corpus input, then mutations, within `limits`.
pub fn fuzz(target: &Target, corpus: &[Vec<u8>], limits: &Limits) -> Report {
    quiet_worker_panics();
    let mut report = Report {
        target: target.name.to_string(),
        ..Report::default()
    };
    let Some(worker) = Worker::start(target.run) else {
        return report;
    };
    let mut rng = StdRng::seed_from_u64(limits.seed);
    let mut pool: Vec<Vec<u8>> = if corpus.is_empty() {
        vec![Vec::new()]
    } else {
        corpus.to_vec()
    };
    let mut seen: HashSet<String> = HashSet::new();
    let started = Instant::now();
    let mut n: u64 = 0;
    loop {
        if limits.inputs.is_some_and(|max| n >= max)
            || limits.duration.is_some_and(|d| started.elapsed() >= d)
        {
            break;
        }
        let input = match corpus.get(n as usize) {
            Some(seed) => seed.clone(),
            None => {
                let base = &pool[rng.gen_range(0..pool.len())];
                let other = &pool[rng.gen_range(0..pool.len())];
                mutate::mutate(&mut rng, base, other, target.dictionary)
            }
        };
        n += 1;
        let began = Instant::now();
        if worker.send.send(input.clone()).is_err() {
            break;
        }
        let answer = match worker.answers.recv_timeout(limits.per_input) {
            Ok(answer) => answer,
            Err(_) => {
                report.hangs.push(Failure {
                    input,
                    message: format!("no answer within {:?}", limits.per_input),
                });
                break;
            }
        };
        report.slowest = report.slowest.max(began.elapsed());
        report.tried += 1;
        match answer {
            Err(message) => {
                report.panics.push(Failure { input, message });
                // The worker survived (catch_unwind); go on.
                continue;
            }
            Ok(outcome) => {
                match &outcome {
                    Outcome::Accepted => report.accepted += 1,
                    Outcome::Refused(_) => report.refused += 1,
                    Outcome::Unnamed(m) => report.unnamed.push(Failure {
                        input: input.clone(),
                        message: m.clone(),
                    }),
                }
                if seen.insert(signature(&outcome)) {
                    report.novel.push(input.clone());
                    pool.push(input);
                }
            }
        }
    }
    report
}

/// The corpus of `target` under `dir` (`fuzz/corpus/TARGET/*`), sorted by name.
pub fn load_corpus(dir: &Path, target: &str) -> Vec<Vec<u8>> {
    let mut files: Vec<_> = std::fs::read_dir(dir.join(target))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files.iter().filter_map(|p| std::fs::read(p).ok()).collect()
}

/// Saves `input` into the corpus of `target` under a name from its hash.
pub fn save(dir: &Path, target: &str, input: &[u8]) -> std::io::Result<std::path::PathBuf> {
    use sha2::Digest;
    let name = hex::encode(&sha2::Sha256::digest(input)[..8]);
    let path = dir.join(target).join(name);
    std::fs::create_dir_all(dir.join(target))?;
    std::fs::write(&path, input)?;
    Ok(path)
}
