//! `lockstep demo`: every area's part of the story, in order, on the
//! embedded defaults (the sandbox integrate, the smoke suite, the kernel
//! benchmarks, the packages and a release of them).

use lockstep_core::Error;
use lockstep_report::{Out, Reporters};

use crate::cli::DemoArgs;

pub fn run(args: DemoArgs, rep: &Reporters) -> Result<i32, Error> {
    let mut story = OutWriter(rep.out());
    let summary = lockstep_sandbox::demo::run(args.dir.as_deref(), rep, &mut story)?;
    let tests = crate::suite::demo(rep)?;
    let bench = crate::bench::demo(rep)?;
    let packages = crate::pkg::demo(rep)?;
    let release = crate::release::demo(rep)?;
    Ok(
        if summary.ok && tests == 0 && bench == 0 && packages == 0 && release == 0 {
            0
        } else {
            1
        },
    )
}

/// The demo's story goes where human output goes.
struct OutWriter(Out);

impl std::io::Write for OutWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.print(&String::from_utf8_lossy(buf));
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
