//! The conformance testee (spec/protocol.md): RunnerMessage frames on stdin,
//! PortMessage frames on stdout, logs on stderr only.

use std::io::{self, BufReader, BufWriter};

use kvspec_port::pb::kvspec::conformance::v1 as conf;
use kvspec_port::protocol::{handle_request, hello_reply, read_frame, write_frame};
use prost::Message;

fn main() {
    let stdin = io::stdin();
    let stdout = io::stdout();
    let mut input = BufReader::new(stdin.lock());
    let mut output = BufWriter::new(stdout.lock());
    loop {
        let frame = match read_frame(&mut input) {
            Ok(Some(f)) => f,
            Ok(None) => return,
            Err(e) => {
                eprintln!("kvspec-rust: reading a frame: {e}");
                std::process::exit(1);
            }
        };
        let msg = match conf::RunnerMessage::decode(&frame[..]) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("kvspec-rust: undecodable RunnerMessage: {e}");
                std::process::exit(1);
            }
        };
        let reply = match msg.message {
            Some(conf::runner_message::Message::Hello(h)) => {
                if h.protocol_version != kvspec_port::PROTOCOL_VERSION {
                    eprintln!(
                        "kvspec-rust: runner speaks protocol {}, this port speaks {}",
                        h.protocol_version,
                        kvspec_port::PROTOCOL_VERSION
                    );
                }
                if h.spec_version != kvspec_port::SPEC_VERSION {
                    eprintln!("kvspec-rust: runner spec {}, port spec {}", h.spec_version, kvspec_port::SPEC_VERSION);
                }
                conf::port_message::Message::Hello(hello_reply())
            }
            Some(conf::runner_message::Message::Request(req)) => {
                eprintln!("kvspec-rust: #{} {}", req.seq, req.case_id);
                let resp = match std::panic::catch_unwind(|| handle_request(&req)) {
                    Ok(r) => r,
                    Err(_) => conf::Response {
                        seq: req.seq,
                        result: Some(conf::response::Result::Error(conf::RuntimeError {
                            message: "the port panicked".into(),
                        })),
                    },
                };
                conf::port_message::Message::Response(resp)
            }
            None => {
                eprintln!("kvspec-rust: empty RunnerMessage");
                std::process::exit(1);
            }
        };
        if let Err(e) = write_frame(&mut output, &conf::PortMessage { message: Some(reply) }) {
            eprintln!("kvspec-rust: writing a frame: {e}");
            std::process::exit(1);
        }
    }
}
