/* http_listen.h - the listening socket of the HTTP server (private to
 * src/ctl/http*.c): parsing listen addresses and binding them ourselves, so a
 * failure says which address and why. http_parse_listen is public (http.h). */
#ifndef SL_HTTP_LISTEN_H
#define SL_HTTP_LISTEN_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"

/* Binds and listens on where ("127.0.0.1:7400", "[::1]:0", ":7400"); *out is
 * the non-blocking socket, *port the port actually bound. SL_EINVAL for a bad
 * address, SL_EIO with the system's reason when it cannot be bound. */
enum sl_err http_open_listener(const char *where, int *out, uint16_t *port,
			       struct sl_diag *d) SL_MUST_USE;

/* The JSON error body of a refusal at the connection limit (code
 * "overloaded", with the limit in the message and the wait in the hint),
 * NUL-terminated in buf; its length. */
size_t http_overload_body(char *buf, size_t n, unsigned max_connections);

/* Refuses a just-accepted socket that the server will not serve: writes a
 * complete 503 answer (Retry-After, Connection: close, the body above) if
 * the socket takes it at once, reads what the client already sent (so that
 * closing does not reset the connection under the answer), and closes fd.
 * Never blocks. */
void http_refuse_socket(int fd, unsigned max_connections);

/* SL_ELIMIT (hint: what to raise or lower) when RLIMIT_NOFILE is below
 * http_fds_needed(max) or max is above HTTP_MAX_CONNECTIONS_LIMIT. */
enum sl_err http_check_fd_limit(unsigned max, struct sl_diag *d) SL_MUST_USE;

/* At EMFILE/ENFILE: closes *spare, accepts one connection from lfd with the
 * freed descriptor, refuses it (http_refuse_socket), and reopens *spare.
 * True when one was refused. */
bool http_refuse_with_spare(int lfd, int *spare, unsigned max_connections);

#endif
