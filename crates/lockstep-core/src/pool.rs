//! The one worker pool and the one `-j` rule.
//!
//! Every command that does many independent things at once (compiles,
//! kernels, executables, wheel builds, tests) runs them on scoped worker
//! threads that each take the next task until none is left. The OS may
//! refuse threads (a `-j` in the thousands under a low limit): the workers
//! that did start do all the work, and only a pool that could start none is
//! an error. `-j` (or a config's `jobs`) means the same everywhere: absent,
//! every core; 0, a usage error.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::error::{Error, Result};

/// Runs `body` with a thread scope for a few different things at once
/// (`integrate status`: the history walk beside the small reads); every
/// thread spawned in it is joined before this returns. Many like things go
/// to [`map`] instead.
pub fn side_by_side<'env, T>(
    body: impl for<'scope> FnOnce(&'scope std::thread::Scope<'scope, 'env>) -> T,
) -> T {
    std::thread::scope(body)
}

/// What a thread of [`side_by_side`] returned: a panic in it is lockstep's
/// bug, reported as an internal error naming `what` rather than a crash.
pub fn joined<T>(handle: std::thread::ScopedJoinHandle<'_, Result<T>>, what: &str) -> Result<T> {
    handle
        .join()
        .unwrap_or_else(|_| Err(Error::failed(format!("internal: {what} panicked"))))
}

/// The cores this process may use (at least 1).
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The worker count of `-j N` or a config's `jobs = N` (`requested`):
/// every core when absent; 0 is refused, naming `what` (`-j`, `[pkg] jobs`).
pub fn jobs(requested: Option<usize>, what: &str) -> Result<usize> {
    match requested {
        Some(0) => Err(
            Error::usage(format!("{what} 0: at least one worker is needed")).hint(format!(
                "give {what} 1 or more, or leave it out to use every core"
            )),
        ),
        Some(n) => Ok(n),
        None => Ok(cpus()),
    }
}

/// Asks the pool to hand out no new task (running ones finish).
#[derive(Debug, Default)]
pub struct Stop(AtomicBool);

impl Stop {
    pub fn stop(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn stopped(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// Starts up to `workers` named scoped threads (`{name}-{n}`), each running
/// `worker(n)`, and waits for all of them. Returns how many started; an
/// error when none could.
pub fn run_workers(name: &str, workers: usize, worker: impl Fn(usize) + Sync) -> Result<usize> {
    let worker = &worker;
    let started = std::thread::scope(|scope| {
        (0..workers.max(1))
            .map_while(|n| {
                std::thread::Builder::new()
                    .name(format!("{name}-{n}"))
                    .spawn_scoped(scope, move || worker(n))
                    .ok()
            })
            .count()
    });
    if started == 0 {
        return Err(
            Error::failed(format!("cannot start any of the {workers} {name} workers"))
                .hint("the system refuses new threads: run with a lower -j"),
        );
    }
    Ok(started)
}

/// Runs `task(i, stop)` for every `i` in `0..tasks` on at most `jobs`
/// workers (never more than there are tasks), in order of `i`; the results
/// come back in that order. After `stop.stop()` no new task starts: those
/// never started are `None`.
pub fn map<T: Send>(
    name: &str,
    jobs: usize,
    tasks: usize,
    task: impl Fn(usize, &Stop) -> T + Sync,
) -> Result<Vec<Option<T>>> {
    let results: Mutex<Vec<Option<T>>> = Mutex::new((0..tasks).map(|_| None).collect());
    if tasks == 0 {
        return Ok(Vec::new());
    }
    let next = AtomicUsize::new(0);
    let stop = Stop::default();
    run_workers(name, jobs.clamp(1, tasks), |_| loop {
        if stop.stopped() {
            break;
        }
        let i = next.fetch_add(1, Ordering::SeqCst);
        if i >= tasks {
            break;
        }
        let value = task(i, &stop);
        results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(value);
    })?;
    Ok(results.into_inner().unwrap_or_else(|e| e.into_inner()))
}

/// [`map`] where every task runs (nothing stops the pool).
pub fn map_all<T: Send>(
    name: &str,
    jobs: usize,
    tasks: usize,
    task: impl Fn(usize) -> T + Sync,
) -> Result<Vec<T>> {
    let results = map(name, jobs, tasks, |i, _| task(i))?;
    // Without a stop every task ran; an empty slot would be a bug here.
    results
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            r.ok_or_else(|| Error::failed(format!("internal: {name} task {i} did not run")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_j_rule() {
        assert_eq!(jobs(Some(3), "-j").unwrap(), 3);
        assert!(jobs(None, "-j").unwrap() >= 1);
        let err = jobs(Some(0), "[pkg] jobs").unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.message.starts_with("[pkg] jobs 0"), "{}", err.message);
    }

    #[test]
    fn results_come_back_in_order() {
        let squares = map_all("test", 4, 100, |i| i * i).unwrap();
        assert_eq!(squares, (0..100).map(|i| i * i).collect::<Vec<_>>());
        assert!(map_all("test", 4, 0, |i| i).unwrap().is_empty());
    }

    #[test]
    fn a_stop_leaves_later_tasks_unstarted() {
        let results = map("test", 1, 10, |i, stop| {
            if i == 3 {
                stop.stop();
            }
            i
        })
        .unwrap();
        assert_eq!(results[..4], [Some(0), Some(1), Some(2), Some(3)]);
        assert!(results[4..].iter().all(Option::is_none));
    }

    #[test]
    fn more_workers_than_the_system_gives_still_finish_the_work() {
        // A million requested workers: the pool is capped by the task count.
        let done = map_all("test", 1_000_000, 8, |i| i).unwrap();
        assert_eq!(done.len(), 8);
    }
}
