//! `lockstep demo`: every area's part of the story, told by lockstep-demo.

use lockstep_core::Error;

use crate::cli::DemoArgs;
use crate::context::Ctx;

pub fn run(args: DemoArgs, ctx: &Ctx) -> Result<i32, Error> {
    let mut story = OutWriter(ctx.out());
    let ok = lockstep_demo::run(args.dir.as_deref(), ctx.sink(), &mut story)?;
    Ok(if ok { 0 } else { 1 })
}

/// The demo's story goes where human output goes.
struct OutWriter(lockstep_report::Out);

impl std::io::Write for OutWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.print(&String::from_utf8_lossy(buf));
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
