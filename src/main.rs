//! The `nbody` command; everything lives in [`nbody::cli`].

fn main() -> std::process::ExitCode {
    nbody::cli::main()
}
