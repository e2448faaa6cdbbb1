//! The extension methods of `--mode acp`, for what ACP has no words for (docs/protocol.md §7):
//! `_agent/steer` delivers a message to the run that is going, after its current tool call
//! (the rest of that model turn's calls are skipped), as RPC's `steer` does.

use agent_client_protocol::v1::schema::SessionId;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, agent_client_protocol::JsonRpcRequest)]
#[request(method = "_agent/steer", response = SteerResponse)]
#[serde(rename_all = "camelCase")]
pub struct SteerRequest {
    pub session_id: SessionId,
    pub message: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, agent_client_protocol::JsonRpcResponse)]
pub struct SteerResponse {}
