// SPDX-License-Identifier: GPL-2.0-or-later
// The dashboard embedded as Qt resources (resources/CMakeLists.txt): every file
// the page loads is in the binary, and the page obeys the server's
// Content-Security-Policy of 'self' only (no inline script or style, no CDN).
// A broken reference here is a blank page in the browser, found without one.

#include <QDirIterator>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QSet>
#include <QtTest>

class TestDashboardResources : public QObject
{
    Q_OBJECT

private:
    static QByteArray read(const QString &path)
    {
        QFile f(path);
        if (!f.open(QIODevice::ReadOnly))
            return QByteArray();
        return f.readAll();
    }

    /// Resolves `ref` (relative to the resource directory `base`) to a
    /// resource path, or an empty string for an absolute or external URL.
    static QString resolve(const QString &base, QString ref)
    {
        ref = ref.section(QLatin1Char('#'), 0, 0).section(QLatin1Char('?'), 0, 0);
        if (ref.isEmpty() || ref.contains(QLatin1String("://")) || ref.startsWith(QLatin1String("data:")))
            return QString();
        if (ref.startsWith(QLatin1Char('/')))
            return QStringLiteral(":/dashboard") + ref;
        return QDir::cleanPath(base + QLatin1Char('/') + ref);
    }

    static QStringList ownFiles(const QString &suffix)
    {
        QStringList out;
        QDirIterator it(QStringLiteral(":/dashboard"), QDir::Files, QDirIterator::Subdirectories);
        while (it.hasNext()) {
            const QString p = it.next();
            if (!p.startsWith(QLatin1String(":/dashboard/vendor/")) && p.endsWith(suffix))
                out << p;
        }
        return out;
    }

private Q_SLOTS:
    void requiredFilesAreEmbedded_data()
    {
        QTest::addColumn<QString>("path");
        for (const char *p : {"index.html", "app.js", "style.css", "vendor/xterm.js",
                              "vendor/xterm.css", "vendor/addon-fit.js"})
            QTest::newRow(p) << QStringLiteral(":/dashboard/") + QLatin1String(p);
    }

    void requiredFilesAreEmbedded()
    {
        QFETCH(QString, path);
        QVERIFY2(QFile::exists(path), qPrintable(path));
        QVERIFY2(read(path).size() > 100, qPrintable(path + QStringLiteral(" is empty")));
    }

    void vendorModulesAreEsModules()
    {
        // terminalview.js imports { Terminal } and { FitAddon } as ES modules.
        QVERIFY(read(QStringLiteral(":/dashboard/vendor/xterm.js")).contains("as Terminal}"));
        QVERIFY(read(QStringLiteral(":/dashboard/vendor/addon-fit.js")).contains("as FitAddon}"));
    }

    void npmManifestsAreNotEmbedded()
    {
        QVERIFY(!QFile::exists(QStringLiteral(":/dashboard/package.json")));
        QVERIFY(!QFile::exists(QStringLiteral(":/dashboard/package-lock.json")));
        QVERIFY(!QFile::exists(QStringLiteral(":/dashboard/node_modules")));
    }

    /// The web app manifest (issue 26): valid JSON with what "Add to Home
    /// screen" needs (name, start_url, display, a 192 and a 512 px icon), and
    /// every icon it names embedded, a PNG of the size it says.
    void manifestIsValid()
    {
        const QString path = QStringLiteral(":/dashboard/manifest.webmanifest");
        QVERIFY(QFile::exists(path));
        QJsonParseError err;
        const QJsonObject m = QJsonDocument::fromJson(read(path), &err).object();
        QVERIFY2(err.error == QJsonParseError::NoError, qPrintable(err.errorString()));
        QCOMPARE(m.value(QStringLiteral("name")).toString(), QStringLiteral("Tether"));
        QCOMPARE(m.value(QStringLiteral("start_url")).toString(), QStringLiteral("/"));
        QCOMPARE(m.value(QStringLiteral("display")).toString(), QStringLiteral("standalone"));
        QSet<QString> sizes;
        for (const QJsonValue &v : m.value(QStringLiteral("icons")).toArray()) {
            const QJsonObject icon = v.toObject();
            const QString file = resolve(QStringLiteral(":/dashboard"), icon.value(QStringLiteral("src")).toString());
            QVERIFY2(QFile::exists(file), qPrintable(file));
            if (icon.value(QStringLiteral("type")).toString() != QLatin1String("image/png"))
                continue;
            // PNG: signature, then the IHDR chunk's width and height (big-endian).
            const QByteArray png = read(file);
            QVERIFY2(png.startsWith("\x89PNG\r\n\x1a\n") && png.size() > 24, qPrintable(file));
            auto be32 = [&](int at) {
                return (quint32(quint8(png[at])) << 24) | (quint32(quint8(png[at + 1])) << 16)
                    | (quint32(quint8(png[at + 2])) << 8) | quint32(quint8(png[at + 3]));
            };
            const QString said = icon.value(QStringLiteral("sizes")).toString();
            QCOMPARE(QStringLiteral("%1x%2").arg(be32(16)).arg(be32(20)), said);
            sizes.insert(said);
        }
        QVERIFY(sizes.contains(QStringLiteral("192x192")));
        QVERIFY(sizes.contains(QStringLiteral("512x512")));
    }

    void htmlReferencesResolve()
    {
        const QStringList pages = ownFiles(QStringLiteral(".html"));
        QVERIFY(!pages.isEmpty());
        static const QRegularExpression attr(QStringLiteral("\\b(?:src|href)\\s*=\\s*\"([^\"]*)\""));
        int checked = 0;
        for (const QString &page : pages) {
            const QString html = QString::fromUtf8(read(page));
            auto it = attr.globalMatch(html);
            while (it.hasNext()) {
                const QString target = resolve(QStringLiteral(":/dashboard"), it.next().captured(1));
                if (target.isEmpty() || target == QLatin1String(":/dashboard"))
                    continue;
                QVERIFY2(QFile::exists(target), qPrintable(page + QStringLiteral(" -> ") + target));
                ++checked;
            }
        }
        QVERIFY(checked >= 4); // icon, two style sheets, app.js
    }

    void moduleImportsResolve()
    {
        // Static `import ... from './x.js'` in every own module, and the vendor
        // modules import nothing (a bare specifier would not load in a browser).
        static const QRegularExpression imp(
            QStringLiteral("(?:^|\\n)\\s*(?:import|export)\\b[^;'\"]*?from\\s*['\"]([^'\"]+)['\"]"));
        int checked = 0;
        for (const QString &file : ownFiles(QStringLiteral(".js"))) {
            const QString js = QString::fromUtf8(read(file));
            auto it = imp.globalMatch(js);
            while (it.hasNext()) {
                const QString spec = it.next().captured(1);
                QVERIFY2(spec.startsWith(QLatin1String("./")) || spec.startsWith(QLatin1String("../")),
                         qPrintable(file + QStringLiteral(": bare import ") + spec));
                const QString target = resolve(file.section(QLatin1Char('/'), 0, -2), spec);
                QVERIFY2(QFile::exists(target), qPrintable(file + QStringLiteral(" imports missing ") + target));
                ++checked;
            }
        }
        QVERIFY(checked >= 4);
    }

    void pageObeysContentSecurityPolicy()
    {
        // Tether serves the dashboard with CSP 'self' only: inline scripts,
        // inline event handlers and style="" attributes would be refused.
        static const QRegularExpression inlineScript(QStringLiteral("<script(?![^>]*\\bsrc=)[^>]*>"));
        static const QRegularExpression styleElement(QStringLiteral("<style\\b"));
        static const QRegularExpression styleAttr(QStringLiteral("<[^>]*\\sstyle\\s*="));
        static const QRegularExpression handlerAttr(QStringLiteral("<[^>]*\\son[a-z]+\\s*="));
        static const QRegularExpression external(QStringLiteral("(?:src|href)\\s*=\\s*\"(?:https?:)?//"));
        static const QRegularExpression comment(QStringLiteral("<!--.*?-->"),
                                                QRegularExpression::DotMatchesEverythingOption);
        for (const QString &page : ownFiles(QStringLiteral(".html"))) {
            const QString html = QString::fromUtf8(read(page)).remove(comment);
            QVERIFY2(!inlineScript.match(html).hasMatch(), qPrintable(page));
            QVERIFY2(!styleElement.match(html).hasMatch(), qPrintable(page));
            QVERIFY2(!styleAttr.match(html).hasMatch(), qPrintable(page));
            QVERIFY2(!handlerAttr.match(html).hasMatch(), qPrintable(page));
            QVERIFY2(!external.match(html).hasMatch(), qPrintable(page));
        }
        // Scripts: no setAttribute('style') (CSP) and no fetches from other origins.
        static const QRegularExpression setStyle(QStringLiteral("setAttribute\\(\\s*['\"]style['\"]"));
        static const QRegularExpression cdn(QStringLiteral("['\"`]https?://"));
        for (const QString &file : ownFiles(QStringLiteral(".js"))) {
            const QString js = QString::fromUtf8(read(file));
            QVERIFY2(!setStyle.match(js).hasMatch(), qPrintable(file));
            QVERIFY2(!cdn.match(js).hasMatch(), qPrintable(file));
        }
    }
};

QTEST_GUILESS_MAIN(TestDashboardResources)
#include "tst_dashboard_resources.moc"
