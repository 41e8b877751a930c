// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// A box around a QLabel that tells the layouts above it about a new text only when the label needs
// another size: at once for another height or more width, once the texts pause (300 ms) for less
// width. QLabel::setText calls QWidget::updateGeometry, which invalidates every layout up to the
// window: a label whose text changes with every slider value (a peak, a count) made the whole
// main window lay itself out again, word-wrapped labels measured again, at every value.

#include <QTimer>
#include <QWidget>

class QLabel;

namespace membudget {

class SteadyLabel : public QWidget
{
    Q_OBJECT
public:
    // Takes `label` as its child; the label keeps its object name, so findChild still finds it.
    explicit SteadyLabel(QLabel *label, QWidget *parent = nullptr);

    QLabel *label() const { return m_label; }

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;
    bool hasHeightForWidth() const override;
    int heightForWidth(int width) const override;

protected:
    bool event(QEvent *event) override;
    bool eventFilter(QObject *watched, QEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;
    void showEvent(QShowEvent *event) override;

private:
    QSize seenNow() const;
    void reconsider();
    bool needsAnotherSize(QSize now) const;
    bool tooSmall() const;
    void passOn(QSize now);

    QLabel *m_label;
    QSize m_seen; // the label's size when the layouts above last asked
    QTimer m_shrink;
};

} // namespace membudget
