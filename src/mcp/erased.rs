//! One transport type for rmcp's client, whichever kind was opened (a stdio server's pipes,
//! streamable HTTP, streamable HTTP signed in). rmcp's service is generic over its transport:
//! its message loop, the tasks it starts and their drop glue are compiled once per transport
//! type, about 75,000 lines of LLVM IR each. Behind one boxed object they are compiled once.
//! The cost is a boxed future per message sent or received, next to rmcp's own JSON work.

use futures_util::future::BoxFuture;
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use std::fmt;

/// A transport's error, whatever its type; shown as that error.
#[derive(Debug)]
pub struct TransportError(Box<dyn std::error::Error + Send + Sync>);

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for TransportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// rmcp's `Transport` as an object (its methods return `impl Future`, so it is not one).
trait ObjectTransport: Send {
    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> BoxFuture<'static, Result<(), TransportError>>;
    fn receive(&mut self) -> BoxFuture<'_, Option<RxJsonRpcMessage<RoleClient>>>;
    fn close(&mut self) -> BoxFuture<'_, Result<(), TransportError>>;
}

impl<T: Transport<RoleClient> + 'static> ObjectTransport for T {
    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> BoxFuture<'static, Result<(), TransportError>> {
        let sending = Transport::send(self, item);
        Box::pin(async move { sending.await.map_err(|e| TransportError(Box::new(e))) })
    }

    fn receive(&mut self) -> BoxFuture<'_, Option<RxJsonRpcMessage<RoleClient>>> {
        Box::pin(Transport::receive(self))
    }

    fn close(&mut self) -> BoxFuture<'_, Result<(), TransportError>> {
        let closing = Transport::close(self);
        Box::pin(async move { closing.await.map_err(|e| TransportError(Box::new(e))) })
    }
}

/// Any client transport, boxed.
pub struct AnyTransport(Box<dyn ObjectTransport>);

impl AnyTransport {
    pub fn new(transport: impl Transport<RoleClient> + 'static) -> AnyTransport {
        AnyTransport(Box::new(transport))
    }
}

impl Transport<RoleClient> for AnyTransport {
    type Error = TransportError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.0.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.0.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.0.close()
    }
}
