// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/preset_catalog.h"
#include "model/parameter_layout.h"
#include "model/training_options.h"
#include "test_architectures.h"

#include <QtTest>

using namespace membudget;
using namespace membudget::testing;

Q_DECLARE_METATYPE(membudget::ModelArchitecture)

class TestParameterLayout : public QObject
{
    Q_OBJECT
private slots:
    void publishedTotals_data()
    {
        QTest::addColumn<ModelArchitecture>("arch");
        QTest::addColumn<qint64>("total");
        QTest::newRow("llama-2-7b") << llama2_7b() << Q_INT64_C(6738415616);
        QTest::newRow("llama-3-8b") << llama3_8b() << Q_INT64_C(8030261248);
        QTest::newRow("mistral-7b-v0.1") << mistral_7b() << Q_INT64_C(7241732096);
        QTest::newRow("llama-3.2-1b (tied)") << llama32_1b() << Q_INT64_C(1235814400);
        QTest::newRow("mixtral-8x7b") << mixtral_8x7b() << Q_INT64_C(46702792704);
        QTest::newRow("gpt2") << gpt2_small() << Q_INT64_C(124439808);
        QTest::newRow("falcon-7b") << falcon_7b() << Q_INT64_C(6921720704);
    }
    void publishedTotals()
    {
        QFETCH(ModelArchitecture, arch);
        QFETCH(qint64, total);
        QCOMPARE(static_cast<qint64>(parameterLayout(arch).total), total);
    }

    void mixtralActiveParameters()
    {
        // Mistral AI: 12.9B active of 46.7B.
        QCOMPARE(static_cast<qint64>(parameterLayout(mixtral_8x7b()).active),
                 Q_INT64_C(12879925248));
    }

    void loraTrainableParameters()
    {
        // r * (in + out) per adapted matrix; Llama-3-8B r16 on all linear layers = 41,943,040.
        const ParameterLayout layout = parameterLayout(llama3_8b());
        QCOMPARE(static_cast<qint64>(loraParameters(layout, TargetAllLinear, 16)),
                 Q_INT64_C(41943040));
        // q and v only: 32 * 16 * ((4096 + 4096) + (4096 + 1024)) = 6,815,744
        QCOMPARE(static_cast<qint64>(loraParameters(layout, TargetQ | TargetV, 16)),
                 Q_INT64_C(6815744));
    }

    void everyPresetWithPublishedCountMatches()
    {
        const PresetCatalog &catalog = PresetCatalog::bundled();
        int checked = 0;
        for (const ModelPreset &m : catalog.models()) {
            if (m.published_parameters == 0)
                continue;
            ++checked;
            QVERIFY2(static_cast<qint64>(parameterLayout(m.arch).total) == m.published_parameters,
                     qPrintable(QString::fromStdString(m.id) + ": computed "
                                + QString::number(static_cast<qint64>(parameterLayout(m.arch).total))
                                + ", published " + QString::number(m.published_parameters)));
        }
        QVERIFY2(checked >= 5, "at least five presets carry a published parameter count");
    }

    void quickModeLandsNearTheRequest_data()
    {
        QTest::addColumn<double>("parameters");
        for (double p : {1e8, 1e9, 7e9, 13e9, 70e9, 405e9, 1e12})
            QTest::newRow(qPrintable(QString::number(p, 'g', 3))) << p;
    }
    void quickModeLandsNearTheRequest()
    {
        QFETCH(double, parameters);
        const ModelArchitecture a = quickArchitecture(parameters);
        const double total = parameterLayout(a).total;
        QVERIFY2(std::abs(total - parameters) / parameters < 0.02,
                 qPrintable(QString("requested %1, got %2").arg(parameters).arg(total)));
        QVERIFY(a.hidden_size % 128 == 0);
        QCOMPARE(a.hidden_size / a.attention_heads, a.head_dim);
    }
};

QTEST_APPLESS_MAIN(TestParameterLayout)
#include "tst_parameter_layout.moc"
