#ifndef ROBOSCOPE_CLINUXSYSTEM_SHIM_H
#define ROBOSCOPE_CLINUXSYSTEM_SHIM_H
// The Linux calls the gateway's event loops need that Swift's Glibc module leaves out.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <netinet/tcp.h>
#include <stddef.h>

// accept4 is declared only under _GNU_SOURCE, which the Glibc module is built without.
extern int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags);
// memmem, likewise (the benchmark's load generator searches messages with it).
extern void *memmem(const void *haystack, size_t haystacklen, const void *needle, size_t needlelen);
#endif
