/*
 * The floor of delivering one message to many WebSocket subscribers, for
 * `deploy/local/bench cpu-per-message` (issue 51): one thread, epoll, each published
 * message framed once, and each subscriber sent everything published since the last
 * wake-up with one writev of those shared, pre-framed bytes. It speaks what gateway-load's
 * reference mode speaks: WebSocket upgrades on any path, and `POST /publish`, whose body
 * goes to every subscriber (`--frames N` sends it as N frames, as the gateway sends a
 * write's N events). Nothing else: no authorization, topics, ordering or bounds.
 *
 *   minimal_broadcast PORT [FRAMES]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_FDS 65536
#define MAX_BATCH 64
#define INPUT 65536

enum kind { FREE, HTTP, SUBSCRIBER };

struct connection {
    enum kind kind;
    char *input;
    size_t used;
    /* Bytes a full socket buffer did not take yet: sent on EPOLLOUT, before anything newer. */
    char *pending;
    size_t pending_used, pending_size;
};

static struct connection connections[MAX_FDS];
static int subscribers[MAX_FDS];
static int subscriber_count;
static int epoll_fd;

/* The messages published since the last wake-up, each framed once. */
static char *batch[MAX_BATCH];
static size_t batch_length[MAX_BATCH];
static int batch_count;

static void drop(int fd) {
    struct connection *c = &connections[fd];
    if (c->kind == SUBSCRIBER) {
        for (int i = 0; i < subscriber_count; i++) {
            if (subscribers[i] == fd) {
                subscribers[i] = subscribers[--subscriber_count];
                break;
            }
        }
    }
    free(c->input);
    free(c->pending);
    memset(c, 0, sizeof *c);
    close(fd);
}

static void keep(struct connection *c, const char *bytes, size_t length) {
    if (c->pending_used + length > c->pending_size) {
        c->pending_size = (c->pending_used + length) * 2;
        c->pending = realloc(c->pending, c->pending_size);
    }
    memcpy(c->pending + c->pending_used, bytes, length);
    c->pending_used += length;
}

/* Writes `count` buffers to `fd`, keeping what the socket does not take. */
static void send_all(int fd, struct iovec *vectors, int count) {
    struct connection *c = &connections[fd];
    if (c->pending_used > 0) {
        for (int i = 0; i < count; i++) keep(c, vectors[i].iov_base, vectors[i].iov_len);
        return;
    }
    ssize_t written = writev(fd, vectors, count);
    if (written < 0) {
        if (errno != EAGAIN) {
            drop(fd);
            return;
        }
        written = 0;
    }
    size_t skip = (size_t)written;
    int wanted_out = 0;
    for (int i = 0; i < count; i++) {
        if (skip >= vectors[i].iov_len) {
            skip -= vectors[i].iov_len;
            continue;
        }
        keep(c, (char *)vectors[i].iov_base + skip, vectors[i].iov_len - skip);
        skip = 0;
        wanted_out = 1;
    }
    if (wanted_out) {
        struct epoll_event event = {.events = EPOLLIN | EPOLLOUT, .data.fd = fd};
        epoll_ctl(epoll_fd, EPOLL_CTL_MOD, fd, &event);
    }
}

static void flush_pending(int fd) {
    struct connection *c = &connections[fd];
    ssize_t written = write(fd, c->pending, c->pending_used);
    if (written < 0) {
        if (errno != EAGAIN) drop(fd);
        return;
    }
    memmove(c->pending, c->pending + written, c->pending_used - (size_t)written);
    c->pending_used -= (size_t)written;
    if (c->pending_used == 0) {
        struct epoll_event event = {.events = EPOLLIN, .data.fd = fd};
        epoll_ctl(epoll_fd, EPOLL_CTL_MOD, fd, &event);
    }
}

static void frame(const char *payload, size_t length, int frames) {
    for (int copy = 0; copy < frames && batch_count < MAX_BATCH; copy++) {
        char *bytes = malloc(length + 10);
        size_t head = 2;
        bytes[0] = (char)0x81; /* FIN, text */
        if (length < 126) {
            bytes[1] = (char)length;
        } else if (length < 65536) {
            bytes[1] = 126;
            bytes[2] = (char)(length >> 8);
            bytes[3] = (char)length;
            head = 4;
        } else {
            bytes[1] = 127;
            for (int i = 0; i < 8; i++) bytes[2 + i] = (char)((uint64_t)length >> (56 - 8 * i));
            head = 10;
        }
        memcpy(bytes + head, payload, length);
        batch[batch_count] = bytes;
        batch_length[batch_count++] = head + length;
    }
}

/* One writev per subscriber of everything framed since the last wake-up. */
static void broadcast(void) {
    if (batch_count == 0) return;
    struct iovec vectors[MAX_BATCH];
    for (int i = 0; i < batch_count; i++) {
        vectors[i].iov_base = batch[i];
        vectors[i].iov_len = batch_length[i];
    }
    /* From the end: a dropped subscriber moves the last one into its place. */
    for (int i = subscriber_count - 1; i >= 0; i--) send_all(subscribers[i], vectors, batch_count);
    for (int i = 0; i < batch_count; i++) free(batch[i]);
    batch_count = 0;
}

static const char *header(const char *head, const char *name) {
    size_t length = strlen(name);
    for (const char *line = strstr(head, "\r\n"); line; line = strstr(line + 2, "\r\n")) {
        if (strncasecmp(line + 2, name, length) == 0 && line[2 + length] == ':') {
            const char *value = line + 3 + length;
            while (*value == ' ') value++;
            return value;
        }
    }
    return NULL;
}

static void upgrade(int fd, const char *key) {
    char joined[128];
    size_t key_length = strcspn(key, "\r\n");
    if (key_length > 64) key_length = 64;
    snprintf(joined, sizeof joined, "%.*s258EAFA5-E914-47DA-95CA-C5AB0DC85B11", (int)key_length, key);
    unsigned char digest[SHA_DIGEST_LENGTH];
    SHA1((unsigned char *)joined, strlen(joined), digest);
    char accept[64];
    EVP_EncodeBlock((unsigned char *)accept, digest, SHA_DIGEST_LENGTH);
    char answer[256];
    int length = snprintf(answer, sizeof answer,
                          "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                          "Sec-WebSocket-Accept: %s\r\n\r\n",
                          accept);
    struct iovec vector = {.iov_base = answer, .iov_len = (size_t)length};
    send_all(fd, &vector, 1);
    connections[fd].kind = SUBSCRIBER;
    subscribers[subscriber_count++] = fd;
}

/* Handles the complete requests in the connection's input; returns 0 once it is dropped. */
static int serve_http(int fd, int frames) {
    struct connection *c = &connections[fd];
    while (c->kind == HTTP) {
        c->input[c->used] = 0;
        char *end = strstr(c->input, "\r\n\r\n");
        if (!end) return 1;
        *end = 0;
        size_t head_length = (size_t)(end - c->input) + 4;
        const char *key = header(c->input, "Sec-WebSocket-Key");
        if (key) {
            upgrade(fd, key);
            c->used = 0;
            return 1;
        }
        const char *length_text = header(c->input, "Content-Length");
        size_t body_length = length_text ? strtoul(length_text, NULL, 10) : 0;
        if (head_length + body_length > INPUT - 1) {
            drop(fd);
            return 0;
        }
        if (c->used < head_length + body_length) {
            *end = '\r';
            return 1;
        }
        frame(c->input + head_length, body_length, frames);
        static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        struct iovec vector = {.iov_base = (void *)ok, .iov_len = sizeof ok - 1};
        send_all(fd, &vector, 1);
        if (connections[fd].kind == FREE) return 0;
        memmove(c->input, c->input + head_length + body_length, c->used - head_length - body_length);
        c->used -= head_length + body_length;
    }
    return 1;
}

static void readable(int fd, int frames) {
    struct connection *c = &connections[fd];
    if (c->kind == SUBSCRIBER) {
        /* What a subscriber sends (pings, a close) is read and dropped. */
        char scratch[4096];
        ssize_t got = read(fd, scratch, sizeof scratch);
        if (got == 0 || (got < 0 && errno != EAGAIN)) drop(fd);
        return;
    }
    ssize_t got = read(fd, c->input + c->used, INPUT - 1 - c->used);
    if (got == 0 || (got < 0 && errno != EAGAIN)) {
        drop(fd);
        return;
    }
    if (got > 0) {
        c->used += (size_t)got;
        serve_http(fd, frames);
    }
}

int main(int argc, char **argv) {
    int port = argc > 1 ? atoi(argv[1]) : 9090;
    int frames = argc > 2 ? atoi(argv[2]) : 1;
    signal(SIGPIPE, SIG_IGN);
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int on = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listener, (struct sockaddr *)&address, sizeof address) != 0 || listen(listener, 4096) != 0) {
        perror("minimal_broadcast: bind");
        return 1;
    }
    epoll_fd = epoll_create1(0);
    struct epoll_event event = {.events = EPOLLIN, .data.fd = listener};
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listener, &event);
    fprintf(stderr, "minimal_broadcast: listening on 127.0.0.1:%d, %d frame(s) per publish\n", port, frames);
    struct epoll_event events[256];
    for (;;) {
        int ready = epoll_wait(epoll_fd, events, 256, -1);
        for (int i = 0; i < ready; i++) {
            int fd = events[i].data.fd;
            if (fd == listener) {
                int client;
                while ((client = accept4(listener, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    if (client >= MAX_FDS) {
                        close(client);
                        continue;
                    }
                    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
                    connections[client].kind = HTTP;
                    connections[client].input = malloc(INPUT);
                    struct epoll_event added = {.events = EPOLLIN, .data.fd = client};
                    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, client, &added);
                }
                continue;
            }
            if (connections[fd].kind == FREE) continue;
            if (events[i].events & EPOLLOUT) flush_pending(fd);
            if (connections[fd].kind != FREE && events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) readable(fd, frames);
        }
        broadcast();
    }
}
