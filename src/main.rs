fn main() -> std::process::ExitCode {
    draftgen::cli::main()
}
