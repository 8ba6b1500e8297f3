package bench

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
	"strconv"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// point is one point of a line chart.
type point struct{ X, Y float64 }

// The size of a chart and the margins around its plotting area, in pixels.
const (
	chartW, chartH                         = 720, 480
	marginL, marginR, marginTop, marginBot = 70, 24, 48, 48
	// markedPoints is the most points a line gets markers at; a longer one
	// (a latency CDF) is drawn as a line alone.
	markedPoints = 50
)

var (
	chartInk  = color.Gray{Y: 0x20}
	chartGrid = color.Gray{Y: 0xdd}
	chartLine = color.RGBA{R: 0x1f, G: 0x5f, B: 0xbf, A: 0xff}
)

// save draws one line chart of points to path as a PNG: the title above,
// the y label above the y axis, the x label under the x axis, a grid at
// the axes' ticks. points are drawn in their order; there must be one.
func save(path, title, x, y string, points []point) error {
	if len(points) == 0 {
		return fmt.Errorf("chart %s: no points", title)
	}
	img := image.NewRGBA(image.Rect(0, 0, chartW, chartH))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	minX, maxX, minY, maxY := points[0].X, points[0].X, 0.0, points[0].Y
	for _, p := range points {
		minX, maxX = math.Min(minX, p.X), math.Max(maxX, p.X)
		minY, maxY = math.Min(minY, p.Y), math.Max(maxY, p.Y)
	}
	xs, ys := ticks(minX, maxX), ticks(minY, maxY)
	left, right, top, bottom := marginL, chartW-marginR, marginTop, chartH-marginBot
	px := func(v float64) int {
		return left + int(math.Round((v-xs[0])/(xs[len(xs)-1]-xs[0])*float64(right-left)))
	}
	py := func(v float64) int {
		return bottom - int(math.Round((v-ys[0])/(ys[len(ys)-1]-ys[0])*float64(bottom-top)))
	}
	for _, v := range xs {
		line(img, px(v), top, px(v), bottom, chartGrid)
		label := tickLabel(v, xs[1]-xs[0])
		text(img, px(v)-width(label)/2, bottom+16, label)
	}
	for _, v := range ys {
		line(img, left, py(v), right, py(v), chartGrid)
		label := tickLabel(v, ys[1]-ys[0])
		text(img, left-8-width(label), py(v)+4, label)
	}
	line(img, left, bottom, right, bottom, chartInk)
	line(img, left, top, left, bottom, chartInk)
	text(img, (chartW-width(title))/2, 20, title)
	text(img, left-40, top-12, y)
	text(img, (left+right-width(x))/2, chartH-10, x)
	for i, p := range points {
		if i > 0 {
			q := points[i-1]
			line(img, px(q.X), py(q.Y), px(p.X), py(p.Y), chartLine)
		}
		if len(points) <= markedPoints {
			draw.Draw(img, image.Rect(px(p.X)-2, py(p.Y)-2, px(p.X)+3, py(p.Y)+3), image.NewUniform(chartLine), image.Point{}, draw.Src)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ticks returns evenly spaced round values from at most lo to at least hi,
// about five steps apart; a range of one value is widened to one step.
func ticks(lo, hi float64) []float64 {
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / 5
	step := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*step >= raw {
			step *= m
			break
		}
	}
	var out []float64
	for v := math.Floor(lo/step) * step; ; v += step {
		out = append(out, v)
		if v >= hi-step*1e-9 {
			return out
		}
	}
}

// tickLabel writes v with as many decimals as the step between ticks has.
func tickLabel(v, step float64) string {
	decimals := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	if step*math.Pow(10, float64(decimals)) != math.Round(step*math.Pow(10, float64(decimals))) {
		decimals++
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

// text draws s with its baseline's left end at (x, y).
func text(img draw.Image, x, y int, s string) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(chartInk), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

// width is how many pixels s takes in the charts' font.
func width(s string) int {
	return font.MeasureString(basicfont.Face7x13, s).Round()
}

// line draws a straight line from (x0, y0) to (x1, y1), two pixels wide.
func line(img draw.Image, x0, y0, x1, y1 int, c color.Color) {
	steps := max(abs(x1-x0), abs(y1-y0), 1)
	for i := 0; i <= steps; i++ {
		x := x0 + (x1-x0)*i/steps
		y := y0 + (y1-y0)*i/steps
		img.Set(x, y, c)
		img.Set(x+1, y, c)
		img.Set(x, y+1, c)
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
