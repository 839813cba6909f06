#ifndef ROBOSCOPE_CLINUXSYSTEM_SHIM_H
#define ROBOSCOPE_CLINUXSYSTEM_SHIM_H
// The Linux calls the gateway's event loops need that Swift's Glibc module leaves out, and
// the IPv4 bind and connect the gateway, gateway-load and the tests share.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <string.h>

// accept4 is declared only under _GNU_SOURCE, which the Glibc module is built without.
extern int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags);
// memmem, likewise (the benchmark's load generator searches messages with it).
extern void *memmem(const void *haystack, size_t haystacklen, const void *needle, size_t needlelen);

// bind(2) (`connecting` 0) or connect(2) (`connecting` 1) of `fd` to an IPv4 address
// given as text ("127.0.0.1") and a port: the one place the gateway, its load generator
// and the tests build a sockaddr_in. -1 with errno EINVAL when `host` is not an IPv4 address.
static inline int roboscope_ipv4(int fd, const char *host, unsigned short port, int connecting) {
    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    if (inet_pton(AF_INET, host, &address.sin_addr) != 1) {
        errno = EINVAL;
        return -1;
    }
    const struct sockaddr *generic = (const struct sockaddr *)&address;
    return connecting ? connect(fd, generic, sizeof address) : bind(fd, generic, sizeof address);
}

static inline int roboscope_bind_ipv4(int fd, const char *host, unsigned short port) {
    return roboscope_ipv4(fd, host, port, 0);
}

static inline int roboscope_connect_ipv4(int fd, const char *host, unsigned short port) {
    return roboscope_ipv4(fd, host, port, 1);
}
#endif
