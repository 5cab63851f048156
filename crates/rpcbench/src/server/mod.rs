//! The servers rpcbench runs itself (the mock nodes, the proxy, the metrics endpoint): the one
//! HTTP/1.1 server loop they share and their listening sockets.

pub(crate) mod http1;
pub(crate) mod listen;
