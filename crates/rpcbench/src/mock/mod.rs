//! Mock JSON-RPC nodes (built in a separate change).
