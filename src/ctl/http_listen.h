/* http_listen.h - the listening socket of the HTTP server (private to
 * src/ctl/http*.c): parsing listen addresses and binding them ourselves, so a
 * failure says which address and why. http_parse_listen is public (http.h). */
#ifndef SL_HTTP_LISTEN_H
#define SL_HTTP_LISTEN_H

#include <stdint.h>

#include "err.h"

/* Binds and listens on where ("127.0.0.1:7400", "[::1]:0", ":7400"); *out is
 * the non-blocking socket, *port the port actually bound. SL_EINVAL for a bad
 * address, SL_EIO with the system's reason when it cannot be bound. */
enum sl_err http_open_listener(const char *where, int *out, uint16_t *port,
			       struct sl_diag *d) SL_MUST_USE;

#endif
