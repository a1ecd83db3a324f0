//! Links the core kernel into a binary without std (see Cargo.toml).
#![no_std]
#![no_main]

use nbody_core::{Executor, Field, Params, Particle, Real, Reference};

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}

// The process entry point, in place of the C runtime's: the kernel enters with the
// stack 16-byte aligned, while a function expects it 8 bytes off (the return address a
// call pushes); aligning and calling restores that, which vectorised code relies on.
core::arch::global_asm!(".globl _start", "_start:", "and rsp, -16", "call {main}", main = sym main);

/// Runs one real kernel call and exits with a status that depends on the result, so
/// the call cannot be optimised away.
extern "C" fn main() -> ! {
    let bodies = [Particle::new(0.0f32, 0.0, 0.0, 1.0), Particle::new(1.0, 0.0, 0.0, 1.0)];
    let mut out = [Field::zero(); 2];
    let ok =
        Reference.accelerations(&bodies, &bodies, &Params::softened(0.0).with_overlap_identical(), &mut out).is_ok()
            && out[0].ax == 1.0
            && 2.0f32.rsqrt_newton(3) > 0.7;
    exit(if ok { 0 } else { 1 })
}

fn exit(code: i32) -> ! {
    // SAFETY: the Linux x86-64 exit_group system call; it never returns.
    unsafe { core::arch::asm!("syscall", in("rax") 231, in("rdi") code, options(noreturn)) }
}
