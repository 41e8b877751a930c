// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QColor>
#include <QVector>

#include <qcustomplot.h>

#include <vector>

namespace membudget {

// Stacked areas of step curves (each value holds from its key to the next, as QCPGraph's
// lsStepLeft draws them), rasterised column by column into one image per replot. QCPGraph's
// channel fills turn each area into a polygon of thousands of vertices that the raster engine
// scan-converts: on the Timeline tab that was half of a replot. Here every pixel is written once
// per band it belongs to, with the band's top edge in a darker colour.
class StackedStepAreas : public QCPLayerable
{
public:
    struct Band
    {
        QColor fill;
        QColor edge;
        QVector<double> top; // cumulative value at each key (the band below ends where this starts)
    };

    StackedStepAreas(QCPAxis *keyAxis, QCPAxis *valueAxis);

    void setData(QVector<double> keys, std::vector<Band> bands);
    void clearData();
    const QVector<double> &keys() const { return m_keys; }
    const std::vector<Band> &bands() const { return m_bands; }

protected:
    void applyDefaultAntialiasingHint(QCPPainter *painter) const override;
    void draw(QCPPainter *painter) override;

private:
    QCPAxis *m_keyAxis;
    QCPAxis *m_valueAxis;
    QVector<double> m_keys;
    std::vector<Band> m_bands;
};

} // namespace membudget
