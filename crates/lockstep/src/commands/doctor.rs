//! `lockstep doctor`: what lockstep-doctor finds, printed.

use lockstep_core::Error;

use crate::context::Ctx;

pub fn run(ctx: &Ctx) -> Result<i32, Error> {
    let toolchains = lockstep_core::paths::toolchains();
    let toolchains = std::path::absolute(&toolchains).unwrap_or(toolchains);
    let home = lockstep_core::paths::home();
    let doctor = lockstep_doctor::examine(&lockstep_doctor::Inputs {
        toolchain: &ctx.section()?,
        root: ctx.root()?,
        cache: &ctx.cache()?,
        toolchains: &toolchains,
        home: &home,
    });
    ctx.show(&doctor, lockstep_doctor::human::report)
}
