#ifndef ROBOSCOPE_COPENSSL_SHIM_H
#define ROBOSCOPE_COPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

// OpenSSL's setters below are macros over SSL_ctrl, which Swift does not import.

/// TLS 1.2 at least, and a read that returns after a record that is not data (a TLS 1.3
/// session ticket) instead of blocking for the next one: the WebSocket reader holds the
/// session's lock while it reads, and a read that waited for data there would hold off
/// every write.
static inline void roboscope_tls_configure(SSL_CTX *context) {
    SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
    SSL_CTX_clear_mode(context, SSL_MODE_AUTO_RETRY);
}

/// The name the client asks for (SNI).
static inline int roboscope_tls_set_server_name(SSL *session, const char *name) {
    return (int)SSL_set_tlsext_host_name(session, (char *)name);
}
#endif
