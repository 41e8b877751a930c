// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// A small HTTP/1.1 server on the loopback address for the Hugging Face tests (no other network is
// reachable in the tests): each path is answered by a handler that sees the request (so it can check
// the Authorization header) and says what to send back: a status, headers and a body, a body
// streamed without a length, or nothing at all (a server that never answers). Every request is
// recorded. It runs in the test's own event loop: drive a child process with QTRY_*, not
// QProcess::waitForFinished, so that the server keeps answering.

#include <QByteArray>
#include <QHostAddress>
#include <QList>
#include <QMap>
#include <QPointer>
#include <QTcpServer>
#include <QTcpSocket>

#include <functional>
#include <memory>

namespace membudget::test {

struct HttpRequest
{
    QByteArray method;
    QByteArray path;
    QMap<QByteArray, QByteArray> headers; // names in lower case
};

struct HttpResponse
{
    int status = 200;
    QByteArray reason = "OK";
    QList<QPair<QByteArray, QByteArray>> headers;
    QByteArray body;
    bool stall = false;     // never answer (keep the connection open)
    qint64 streamBytes = 0; // > 0: send this many bytes without a Content-Length

    static HttpResponse json(const QByteArray &body)
    {
        HttpResponse r;
        r.headers = {{"Content-Type", "application/json"}};
        r.body = body;
        return r;
    }
    static HttpResponse error(int status, const QByteArray &reason, const QByteArray &code = {})
    {
        HttpResponse r;
        r.status = status;
        r.reason = reason;
        if (!code.isEmpty())
            r.headers = {{"X-Error-Code", code}};
        r.body = reason;
        return r;
    }
    static HttpResponse redirect(int status, const QByteArray &location)
    {
        HttpResponse r;
        r.status = status;
        r.reason = "Temporary Redirect";
        r.headers = {{"Location", location}};
        return r;
    }
};

class LocalHttpServer
{
public:
    using Handler = std::function<HttpResponse(const HttpRequest &)>;

    LocalHttpServer()
        : m_server(std::make_unique<QTcpServer>())
    {
        QObject::connect(m_server.get(), &QTcpServer::newConnection, m_server.get(), [this] {
            while (QTcpSocket *socket = m_server->nextPendingConnection())
                accept(socket);
        });
    }
    ~LocalHttpServer() { close(); }

    bool listen() { return m_server->listen(QHostAddress::LocalHost, 0); }
    quint16 port() const { return m_port ? m_port : m_server->serverPort(); }
    QString baseUrl() const { return QStringLiteral("http://127.0.0.1:%1").arg(port()); }
    // Stops listening and drops every open connection (the "offline" case).
    void close()
    {
        if (m_server->isListening())
            m_port = m_server->serverPort();
        m_server->close();
        for (const QPointer<QTcpSocket> &s : m_sockets)
            if (s)
                s->abort();
        m_sockets.clear();
    }

    // Answers `path` (exact match, without the query) with `handler`; others get 404.
    void route(const QByteArray &path, Handler handler) { m_routes[path] = std::move(handler); }
    void serveFile(const QByteArray &path, const QByteArray &body)
    {
        route(path, [body](const HttpRequest &) { return HttpResponse::json(body); });
    }

    const QList<HttpRequest> &requests() const { return m_requests; }
    void clearRequests() { m_requests.clear(); }

private:
    void accept(QTcpSocket *socket)
    {
        m_sockets << socket;
        auto buffer = std::make_shared<QByteArray>();
        QObject::connect(socket, &QTcpSocket::readyRead, socket, [this, socket, buffer] {
            *buffer += socket->readAll();
            const qsizetype end = buffer->indexOf("\r\n\r\n");
            if (end < 0)
                return;
            HttpRequest request = parse(buffer->left(end));
            buffer->clear();
            m_requests << request;
            respond(socket, request);
        });
        QObject::connect(socket, &QTcpSocket::disconnected, socket, &QObject::deleteLater);
    }

    static HttpRequest parse(const QByteArray &head)
    {
        HttpRequest r;
        const QList<QByteArray> lines = head.split('\n');
        const QList<QByteArray> first = lines.value(0).trimmed().split(' ');
        r.method = first.value(0);
        r.path = first.value(1);
        for (int i = 1; i < lines.size(); ++i) {
            const qsizetype colon = lines[i].indexOf(':');
            if (colon > 0)
                r.headers[lines[i].left(colon).trimmed().toLower()]
                    = lines[i].mid(colon + 1).trimmed();
        }
        return r;
    }

    void respond(QTcpSocket *socket, const HttpRequest &request)
    {
        const QByteArray path = request.path.left(
            request.path.indexOf('?') < 0 ? request.path.size() : request.path.indexOf('?'));
        const auto it = m_routes.constFind(path);
        const HttpResponse r = it != m_routes.cend() ? (*it)(request)
                                                     : HttpResponse::error(404, "Not Found");
        if (r.stall)
            return;
        QByteArray out = "HTTP/1.1 " + QByteArray::number(r.status) + ' ' + r.reason + "\r\n";
        for (const auto &h : r.headers)
            out += h.first + ": " + h.second + "\r\n";
        if (r.streamBytes == 0)
            out += "Content-Length: " + QByteArray::number(r.body.size()) + "\r\n";
        out += "Connection: close\r\n\r\n";
        socket->write(out);
        if (r.streamBytes > 0) {
            const QByteArray chunk(64 * 1024, ' ');
            for (qint64 sent = 0; sent < r.streamBytes; sent += chunk.size())
                socket->write(chunk);
        } else {
            socket->write(r.body);
        }
        socket->disconnectFromHost();
    }

    std::unique_ptr<QTcpServer> m_server;
    QMap<QByteArray, Handler> m_routes;
    QList<HttpRequest> m_requests;
    QList<QPointer<QTcpSocket>> m_sockets;
    quint16 m_port = 0;
};

} // namespace membudget::test
