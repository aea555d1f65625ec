// SPDX-License-Identifier: GPL-2.0-or-later
// Access key: format (43 base64url characters for 32 random bytes), that the
// bytes come from the system generator and not a seeded or copied
// pseudo-random state, and constantTimeEquals()'s results and timing.
#include "accesskey.h"

#include <QElapsedTimer>
#include <QRegularExpression>
#include <QSet>
#include <QTest>

#include <sys/wait.h>
#include <unistd.h>

using namespace Tether;

namespace {

QByteArray decodeKey(const QString &key)
{
    return QByteArray::fromBase64(key.toLatin1(), QByteArray::Base64UrlEncoding | QByteArray::AbortOnBase64DecodingErrors);
}

/// Fastest of `runs` timings (ns) of constantTimeEquals(a, b): the minimum is
/// the measure least disturbed by other load on the machine.
qint64 fastestCompare(const QByteArray &a, const QByteArray &b, int runs)
{
    qint64 best = std::numeric_limits<qint64>::max();
    for (int i = 0; i < runs; ++i) {
        QElapsedTimer t;
        t.start();
        const bool equal = constantTimeEquals(a, b);
        const qint64 ns = t.nsecsElapsed();
        if (equal)
            return -1;
        best = qMin(best, ns);
    }
    return best;
}

} // namespace

class TestAccessKey : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void format()
    {
        // 32 bytes, base64url without padding (RFC 4648 §5): 43 characters
        // that need no escaping in a URL or a cookie.
        static const QRegularExpression re(QStringLiteral("^[A-Za-z0-9_-]{43}$"));
        for (int i = 0; i < 200; ++i) {
            const QString key = generateAccessKey();
            QVERIFY2(re.match(key).hasMatch(), qPrintable(key));
            const QByteArray raw = decodeKey(key);
            QCOMPARE(raw.size(), 32);
            // Canonical encoding: the 43rd character carries only 2 data bits.
            QCOMPARE(QString::fromLatin1(raw.toBase64(QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals)), key);
        }
    }

    void keysDiffer()
    {
        QSet<QString> seen;
        for (int i = 0; i < 2000; ++i)
            seen.insert(generateAccessKey());
        QCOMPARE(seen.size(), 2000);
    }

    void bitsAreUniform()
    {
        // Over 4000 keys each of the 256 bits is set about half the time. A
        // fair bit lands outside 2000 ± 300 (6.7 sigma) with probability
        // about 2e-11 per bit; a stuck or biased byte (a zeroed word, a
        // truncated fill, text instead of bytes) lands far outside.
        const int n = 4000;
        QVector<int> ones(256, 0);
        QVector<int> alphabet(64, 0);
        static const QByteArray chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        for (int i = 0; i < n; ++i) {
            const QString key = generateAccessKey();
            const QByteArray raw = decodeKey(key);
            QCOMPARE(raw.size(), 32);
            for (int bit = 0; bit < 256; ++bit)
                ones[bit] += (uchar(raw.at(bit / 8)) >> (bit % 8)) & 1;
            for (int c = 0; c < 42; ++c) // the 43rd character has 4 possible values only
                ++alphabet[chars.indexOf(key.at(c).toLatin1())];
        }
        for (int bit = 0; bit < 256; ++bit)
            QVERIFY2(qAbs(ones.at(bit) - n / 2) < 300, qPrintable(QStringLiteral("bit %1 set %2 times of %3").arg(bit).arg(ones.at(bit)).arg(n)));
        // Every character of the alphabet shows up: 168000 draws, 2625 each
        // on average.
        for (int c = 0; c < 64; ++c)
            QVERIFY2(alphabet.at(c) > 2000, qPrintable(QStringLiteral("'%1' %2 times").arg(QLatin1Char(chars.at(c))).arg(alphabet.at(c))));
    }

    void forkedProcessesDrawDifferentKeys()
    {
        // The system CSPRNG (getrandom(2)) has no state in the process. A
        // user-space generator (QRandomGenerator::global(), std::mt19937)
        // is copied by fork(): a server forked from a parent that made a key
        // would make the same key again.
        (void)generateAccessKey();
        int fds[2];
        QCOMPARE(::pipe(fds), 0);
        const pid_t pid = ::fork();
        QVERIFY(pid >= 0);
        if (pid == 0) {
            const QByteArray k = generateAccessKey().toLatin1();
            const ssize_t w = ::write(fds[1], k.constData(), size_t(k.size()));
            ::_exit(w == k.size() ? 0 : 1);
        }
        ::close(fds[1]);
        const QByteArray mine = generateAccessKey().toLatin1();
        char buf[64];
        qsizetype got = 0;
        for (;;) {
            const ssize_t n = ::read(fds[0], buf + got, sizeof(buf) - size_t(got));
            if (n <= 0)
                break;
            got += n;
        }
        ::close(fds[0]);
        int status = 0;
        QCOMPARE(::waitpid(pid, &status, 0), pid);
        QVERIFY(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        const QByteArray child(buf, int(got));
        QCOMPARE(child.size(), 43);
        QVERIFY2(child != mine, child.constData());
    }

    void constantTimeEquals_data()
    {
        QTest::addColumn<QByteArray>("a");
        QTest::addColumn<QByteArray>("b");
        QTest::addColumn<bool>("equal");
        const QByteArray key = "Zx9_-abcdefghijklmnopqrstuvwxyzABCDEFGHIJK";
        QTest::newRow("same") << key << key << true;
        QTest::newRow("both empty") << QByteArray() << QByteArray("") << true;
        QTest::newRow("first byte differs") << key << QByteArray("A" + key.mid(1)) << false;
        QTest::newRow("last byte differs") << key << QByteArray(key.left(key.size() - 1) + "L") << false;
        QTest::newRow("case differs") << QByteArray("abc") << QByteArray("abC") << false;
        QTest::newRow("prefix") << key << key.left(key.size() - 1) << false;
        QTest::newRow("longer") << key << QByteArray(key + "x") << false;
        QTest::newRow("empty vs key") << QByteArray() << key << false;
        QTest::newRow("key vs empty") << key << QByteArray() << false;
        // Not C strings: a NUL does not end the comparison.
        QTest::newRow("after a NUL") << QByteArray("a\0b", 3) << QByteArray("a\0c", 3) << false;
        QTest::newRow("NULs equal") << QByteArray("a\0b", 3) << QByteArray("a\0b", 3) << true;
        // Bytes are compared unsigned and whole: only the high bit differs.
        QTest::newRow("high bit") << QByteArray("\x80") << QByteArray("\x00", 1) << false;
        QTest::newRow("0xff vs 0x7f") << QByteArray("\xff") << QByteArray("\x7f") << false;
        QTest::newRow("high bytes equal") << QByteArray("\xfe\xff") << QByteArray("\xfe\xff") << true;
    }
    void constantTimeEquals()
    {
        QFETCH(QByteArray, a);
        QFETCH(QByteArray, b);
        QFETCH(bool, equal);
        QCOMPARE(Tether::constantTimeEquals(a, b), equal);
        QCOMPARE(Tether::constantTimeEquals(b, a), equal);
    }

    void timeDoesNotDependOnWhereTheyDiffer()
    {
        // A comparison that stops at the first difference answers a wrong
        // first byte in nanoseconds and a wrong last byte after scanning the
        // whole string: the timing the key check must not leak. Strings of
        // 1 MiB make the scan long enough to measure; the fastest of several
        // runs is compared, which other load can only slow down.
        const QByteArray a(1 << 20, 'k');
        QByteArray early = a;
        early[0] = 'x';
        QByteArray late = a;
        late[late.size() - 1] = 'x';
        const qint64 tEarly = fastestCompare(a, early, 15);
        const qint64 tLate = fastestCompare(a, late, 15);
        QVERIFY(tEarly > 0 && tLate > 0);
        const double ratio = double(tLate) / double(tEarly);
        QVERIFY2(ratio > 0.25 && ratio < 4.0,
                 qPrintable(QStringLiteral("first byte differs: %1 ns, last byte differs: %2 ns").arg(tEarly).arg(tLate)));
    }
};

QTEST_APPLESS_MAIN(TestAccessKey)
#include "tst_accesskey.moc"
