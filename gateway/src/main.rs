//! satlab-gateway: the edge router at both satellite edges (ETEN notifier, CETEN statistics,
//! RED/ECN AQM, IP-ERN router, split-TCP PEP). Its data plane arrives with the gateway issue;
//! until then the binary only identifies itself, so deployments can already check versions.

fn main() {
    let arg = std::env::args().nth(1);
    match arg.as_deref() {
        Some("--version") | Some("-V") => println!("satlab-gateway {}", env!("CARGO_PKG_VERSION")),
        _ => {
            eprintln!("satlab-gateway: no forwarding function is built yet (see the gateway issue); try --version");
            std::process::exit(2);
        }
    }
}
