// SPDX-License-Identifier: GPL-2.0-or-later
// Keystroke echo through the desktop's terminal window (issue 23), for
// `make bench` (bench/run.py drives it beside bench_client's `tether attach`
// figures). A TerminalWindow (QTermWidget in teletype mode, offscreen) is
// attached as the control viewer of a new session of a running server, over
// the documented protocol, exactly as the desktop app opens one. Each key is
// a key press delivered to the widget's display: its emulator turns it into
// bytes (sendData), the window passes them through its replay input gate to
// AttachClient, the server writes them to `cat`, whose echo comes back over
// the WebSocket, through the window's write queue to the widget's own PTY;
// the time is taken when the widget has read the echo from that PTY
// (QTermWidget::receivedData, emitted as the bytes reach its emulator).
//
// Usage: bench_window keys N URL KEY -- ARGV   (ARGV: the session's command;
// it prints @@GO@@ when ready). One JSON object on stdout:
// {"us": [...], "timeouts": T}. Needs QTermWidget (the Qt 5 tree).
#include "terminalwindow.h"

#include <qtermwidget5/qtermwidget.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QKeyEvent>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QTimer>

#include <cstdio>
#include <cstdlib>
#include <functional>

using namespace Tether;

namespace {

[[noreturn]] void fail(const QString &why)
{
    std::fprintf(stderr, "bench_window: %s\n", qPrintable(why));
    std::exit(1);
}

/// Runs the event loop until `done()` or `ms` elapse (sleeping in the
/// dispatcher between events; a 50 ms tick bounds each wait); false on timeout.
bool waitFor(const std::function<bool()> &done, int ms)
{
    QElapsedTimer t;
    t.start();
    QTimer tick;
    tick.start(50);
    while (!done()) {
        if (t.elapsed() > ms)
            return false;
        QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents);
    }
    return true;
}

QNetworkReply *call(QNetworkAccessManager &nam, const ServerEndpoint &ep, const QByteArray &verb, const QString &path,
                    const QJsonObject &body = {})
{
    QNetworkRequest req(ep.resolved(path));
    req.setRawHeader("Authorization", "Bearer " + ep.key.toUtf8());
    req.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
    return nam.sendCustomRequest(req, verb, body.isEmpty() ? QByteArray() : QJsonDocument(body).toJson());
}

/// The widget that takes key events: QTermWidget's TerminalDisplay child.
QWidget *display(QTermWidget *t)
{
    for (QWidget *k : t->findChildren<QWidget *>()) {
        if (QByteArray(k->metaObject()->className()).endsWith("TerminalDisplay"))
            return k;
    }
    return t;
}

} // namespace

int main(int argc, char **argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QStringList args = app.arguments().mid(1);
    const int dash = int(args.indexOf(QStringLiteral("--")));
    const QStringList command = dash >= 0 ? args.mid(dash + 1) : QStringList();
    if (dash >= 0)
        args = args.mid(0, dash);
    if (args.size() < 4 || args.at(0) != QLatin1String("keys") || command.isEmpty())
        fail(QStringLiteral("usage: bench_window keys N URL KEY -- ARGV"));
    const int n = args.at(1).toInt();
    ServerEndpoint ep;
    ep.url = QUrl(args.at(2));
    ep.key = args.at(3);

    QNetworkAccessManager nam;
    QNetworkReply *made = call(nam, ep, "POST", QStringLiteral("api/sessions"),
                               QJsonObject{{QStringLiteral("command"), QJsonArray::fromStringList(command)},
                                           {QStringLiteral("cols"), 80},
                                           {QStringLiteral("rows"), 24}});
    if (!waitFor([made] { return made->isFinished(); }, 30000))
        fail(QStringLiteral("POST /api/sessions: no answer"));
    const QString id = QJsonDocument::fromJson(made->readAll()).object().value(QStringLiteral("id")).toString();
    if (id.isEmpty())
        fail(QStringLiteral("POST /api/sessions: %1").arg(made->errorString()));

    int result = 0;
    {
        TerminalWindow w(ep, id, ViewerMode::Control);
        w.resize(w.sizeForCells(80, 24));
        QString received;
        QObject::connect(w.terminal(), &QTermWidget::receivedData, [&received](const QString &s) { received += s; });
        w.show();
        w.attachSession();
        if (!waitFor([&] { return w.isAttached() && !w.isReplaying() && received.contains(QStringLiteral("@@GO@@")); },
                     30000))
            fail(QStringLiteral("the window did not attach: %1").arg(w.bannerText()));
        // Let the attach's own traffic (resize, title) settle.
        waitFor([] { return false; }, 300);
        QWidget *d = display(w.terminal());
        QJsonArray us;
        int timeouts = 0;
        for (int i = 0; i < n; ++i) {
            const char key = char('a' + i % 26);
            received.clear();
            QElapsedTimer clock;
            clock.start();
            QKeyEvent press(QEvent::KeyPress, Qt::Key_A + i % 26, Qt::NoModifier, QString(QLatin1Char(key)));
            QCoreApplication::sendEvent(d, &press);
            QKeyEvent release(QEvent::KeyRelease, Qt::Key_A + i % 26, Qt::NoModifier, QString(QLatin1Char(key)));
            QCoreApplication::sendEvent(d, &release);
            if (waitFor([&] { return received.contains(QLatin1Char(key)); }, 2000))
                us.append(clock.nsecsElapsed() / 1e3);
            else
                ++timeouts;
        }
        std::printf("%s\n", QJsonDocument(QJsonObject{{QStringLiteral("us"), us}, {QStringLiteral("timeouts"), timeouts}})
                                .toJson(QJsonDocument::Compact)
                                .constData());
        w.close();
    }
    QNetworkReply *gone = call(nam, ep, "DELETE", QStringLiteral("api/sessions/") + id);
    waitFor([gone] { return gone->isFinished(); }, 30000);
    return result;
}
