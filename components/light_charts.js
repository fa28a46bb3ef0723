// ContextLab's light charts: plain SVG drawn in the page by this script, with no chart
// library to fetch and compile, so the Word senses lesson shows its first map quickly.
//   kind "map":   one word's uses as points coloured by sense. Hover or tap a point for
//                 its sentence (the word in bold) and the sense's gloss. Ctrl + wheel or
//                 a trackpad pinch: zoom (a plain wheel scrolls the page, and a finger on
//                 a phone scrolls it too); mouse drag: pan; double-click or "Reset zoom":
//                 the whole map again. Where the page asks for it (`pick`), a click on a
//                 point (or a second tap on a phone) sends the use's number back: the page
//                 then looks for its nearest uses.
//   kind "lines": one line per series over the layers; hover for every value at a layer.
// Both: click a legend entry to hide or show it; "PNG" downloads the chart as a picture.
// Every text from the server is set with textContent: nothing is parsed as HTML.

const SVG = "http://www.w3.org/2000/svg";
const PAINT = ["fill", "fill-opacity", "stroke", "stroke-width", "stroke-dasharray", "opacity", "font-size", "display"];

function el(tag, attrs = {}, text) {
  const node = tag.startsWith("svg:") ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

function starPath(cx, cy, outer) {
  const inner = outer * 0.45;
  let d = "";
  for (let i = 0; i < 10; i++) {
    const r = i % 2 ? inner : outer;
    const a = (Math.PI / 5) * i - Math.PI / 2;
    d += `${i ? "L" : "M"}${(cx + r * Math.cos(a)).toFixed(1)},${(cy + r * Math.sin(a)).toFixed(1)}`;
  }
  return `${d}Z`;
}

// [lo, hi] of the values with a small margin; one value alone gets [v - 1, v + 1].
function extent(values, margin = 0.04) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (!(hi - lo > 1e-9)) return [lo - 1, hi + 1];
  return [lo - (hi - lo) * margin, hi + (hi - lo) * margin];
}

// About `count` round tick values from lo to hi, 1, 2 or 5 times a power of ten apart
// (the step nearest to an even split, as d3's ticks choose it).
function ticks(lo, hi, count) {
  const raw = (hi - lo) / Math.max(count, 1);
  if (!(raw > 0)) return [lo];
  let step = 10 ** Math.floor(Math.log10(raw));
  const error = raw / step;
  if (error >= Math.sqrt(50)) step *= 10;
  else if (error >= Math.sqrt(10)) step *= 5;
  else if (error >= Math.sqrt(2)) step *= 2;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

// The frame shared by both kinds: title, buttons, plot stage with its hover card, legend,
// PNG export and redraw on resize; each kind sets `chart.draw()`, which lays its marks out
// for `chart.width`. Entries hidden from the legend stay hidden when new data comes (the
// layer slider moved): they are kept, by name, on the root element that Streamlit keeps.
function frame(root, data, height) {
  const title = el("div", { class: "title" }, data.title);
  const svg = el("svg:svg", { class: "plot", height, role: "img", "aria-label": data.title });
  const tip = el("div", { class: "tip", role: "tooltip" });
  tip.hidden = true;
  const tools = el("div", { class: "tools" });
  const png = el("button", { type: "button", title: data.labels.png, class: "png" }, "PNG");
  tools.append(png);
  const stage = el("div", { class: "stage" });
  stage.append(svg, tip);
  const legend = el("div", { class: "legend" });
  const head = el("div", { class: "head" });
  head.append(title, tools);
  root.replaceChildren(head, stage, legend);
  root.hiddenEntries ||= new Set(); // (not `hidden`: that is the element's own attribute)
  const chart = { svg, tip, tools, legend, width: Math.max(root.clientWidth, 240), height, hidden: root.hiddenEntries };

  chart.show = (lines, x, y) => {
    tip.replaceChildren(...lines);
    tip.hidden = false;
    const left = Math.min(Math.max(x - tip.offsetWidth / 2, 0), Math.max(chart.width - tip.offsetWidth, 0));
    tip.style.left = `${left}px`;
    tip.style.top = `${y > height / 2 ? y - tip.offsetHeight - 12 : y + 12}px`;
  };
  chart.hide = () => {
    tip.hidden = true;
  };

  // One button per entry: click hides or shows it (then `chart.draw` runs again).
  chart.legendItem = (name, swatch) => {
    const item = el("button", { type: "button", class: "item" });
    item.append(swatch, name);
    const mark = () => {
      item.setAttribute("aria-pressed", String(!chart.hidden.has(name)));
      item.classList.toggle("off", chart.hidden.has(name));
    };
    item.addEventListener("click", () => {
      if (chart.hidden.has(name)) chart.hidden.delete(name);
      else chart.hidden.add(name);
      mark();
      chart.draw();
    });
    mark();
    legend.append(item);
  };

  // The chart as a PNG at twice its size: title, plot, and the legend entries shown.
  png.addEventListener("click", () => {
    const scale = 2;
    const entries = [...legend.querySelectorAll(".item:not(.off)")].map((item) => [
      item.textContent,
      item.querySelector("[data-color]")?.dataset.color || "#111",
    ]);
    const full = 34 + height + 16 + 22 * entries.length;
    const canvas = el("canvas", { width: chart.width * scale, height: full * scale });
    const ctx = canvas.getContext("2d");
    ctx.scale(scale, scale);
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, chart.width, full);
    const image = new Image();
    image.onload = () => {
      ctx.fillStyle = "#111";
      ctx.font = "15px sans-serif";
      ctx.fillText(data.title, 8, 22);
      ctx.drawImage(image, 0, 34);
      ctx.font = "13px sans-serif";
      let y = 34 + height + 26;
      for (const [name, color] of entries) {
        ctx.fillStyle = color;
        ctx.fillRect(10, y - 9, 10, 10);
        ctx.fillStyle = "#111";
        ctx.fillText(name, 26, y);
        y += 22;
      }
      el("a", { download: `${data.file}.png`, href: canvas.toDataURL("image/png") }).click();
    };
    const copy = svg.cloneNode(true);
    copy.setAttribute("xmlns", SVG);
    copy.setAttribute("font-family", "sans-serif");
    // A picture of the SVG sees no stylesheet: each mark takes its computed style along.
    const sources = [svg, ...svg.querySelectorAll("*")];
    [copy, ...copy.querySelectorAll("*")].forEach((node, i) => {
      const style = getComputedStyle(sources[i]);
      node.setAttribute("style", PAINT.map((name) => `${name}:${style.getPropertyValue(name)}`).join(";"));
    });
    image.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(new XMLSerializer().serializeToString(copy))}`;
  });

  const resize = new ResizeObserver(() => {
    const now = Math.max(root.clientWidth, 240);
    if (Math.abs(now - chart.width) > 1) {
      chart.width = now;
      chart.draw();
    }
  });
  resize.observe(root);
  chart.stop = () => resize.disconnect();
  return chart;
}

// A legend mark: a dot (map), a square (line) or a dashed stroke (dashed line).
function swatch(color, shape = "round") {
  const style = shape === "dash" ? `border-top:2px dashed ${color}` : `background:${color}`;
  return el("span", { class: `swatch ${shape}`, style, "data-color": color });
}

function senseMap(root, data, component) {
  const PAD = 18;
  const chart = frame(root, data, 340);
  const { svg, height } = chart;
  const points = data.points;
  // Stars: the learner's sentence (black), and a class's sentences (each in the colour of the sense it votes for)
  const stars = (data.own ? [data.own] : []).concat(data.others || []);
  const all = points.concat(stars);
  const [x0, x1] = extent(all.map((p) => p.x));
  const [y0, y1] = extent(all.map((p) => p.y));
  let view = { k: 1, dx: 0, dy: 0 }; // zoom factor and pan, in pixels
  const px = (x) => (PAD + ((x - x0) / (x1 - x0)) * (chart.width - 2 * PAD)) * view.k + view.dx;
  const py = (y) => (height - PAD - ((y - y0) / (y1 - y0)) * (height - 2 * PAD)) * view.k + view.dy;

  const back = el("svg:rect", { class: "frame", x: 0.5, y: 0.5, height: height - 1 });
  const marks = points.map((p) => Object.assign(el("svg:circle", { r: 5, fill: data.colors[p.sense], class: "point" }), { datum: p }));
  for (const p of stars) {
    const star = el("svg:path", { class: "point own" });
    if (p.sense >= 0) star.setAttribute("style", `fill:${data.colors[p.sense]}`);
    marks.push(Object.assign(star, { datum: p, star: true }));
  }
  svg.append(back, ...marks);

  chart.draw = () => {
    svg.setAttribute("width", chart.width);
    back.setAttribute("width", chart.width - 1);
    for (const mark of marks) {
      const p = mark.datum;
      if (mark.star) mark.setAttribute("d", starPath(px(p.x), py(p.y), 11));
      else {
        mark.setAttribute("cx", px(p.x).toFixed(1));
        mark.setAttribute("cy", py(p.y).toFixed(1));
        mark.style.display = chart.hidden.has(data.senses[p.sense]) ? "none" : "";
      }
    }
  };

  // The hover card: the sentence with its word in bold (span = [start, end)), then the gloss, and where the
  // page picks uses, how to pick this one.
  let carded = null; // the mark whose card shows
  const show = (mark) => {
    const p = mark.datum;
    const [start, end] = p.span;
    const sentence = el("div", { class: "sentence" });
    sentence.append(p.sentence.slice(0, start), el("b", {}, p.sentence.slice(start, end)), p.sentence.slice(end));
    const lines = [sentence, el("div", { class: "note" }, p.note)];
    if (data.pick && p.use !== undefined) lines.push(el("div", { class: "pick" }, data.pick));
    chart.show(lines, px(p.x), py(p.y));
    carded = mark;
  };
  const hide = chart.hide;
  chart.hide = () => {
    carded = null;
    hide();
  };
  // A use picked: a click of the main button on a point, or a finger's tap on the point whose card already
  // showed before the tap. Read on "click", which a scroll, a drag or another button never sends.
  let pressed = null; // the point pressed, and whether its card showed before
  const pick = (e) => {
    const mark = e.target;
    const was = pressed && pressed.mark === mark ? pressed : null;
    pressed = null;
    if (!data.pick || !mark.datum || mark.datum.use === undefined || !was || e.button !== 0) return;
    if (was.touch && !was.carded) return; // a first tap reads the card
    if (component.setTriggerValue) component.setTriggerValue("picked", mark.datum.use);
  };
  svg.addEventListener("click", pick);
  // A mouse shows the card while over a point; a finger shows it on tap, until the next tap.
  svg.addEventListener("pointerover", (e) => e.pointerType !== "touch" && e.target.datum && show(e.target));
  svg.addEventListener("pointerout", (e) => e.pointerType !== "touch" && e.target.datum && chart.hide());

  data.senses.forEach((sense, i) => chart.legendItem(sense, swatch(data.colors[i])));
  if (stars.length) {
    const mine = el("span", { class: "item mine" });
    mine.append(el("span", { class: "star", "data-color": "#111" }, "★"), data.own_name);
    chart.legend.append(mine);
  }

  const zoom = (factor, cx, cy) => {
    const k = Math.min(Math.max(view.k * factor, 1), 40);
    const f = k / view.k;
    view = { k, dx: cx - (cx - view.dx) * f, dy: cy - (cy - view.dy) * f };
    chart.draw();
  };
  svg.addEventListener(
    "wheel",
    (e) => {
      if (!(e.ctrlKey || e.metaKey)) return; // Chrome sends a trackpad pinch as ctrl + wheel
      e.preventDefault();
      const box = svg.getBoundingClientRect();
      zoom(Math.exp(-e.deltaY * 0.002), e.clientX - box.left, e.clientY - box.top);
    },
    { passive: false },
  );
  let drag = null;
  svg.addEventListener("pointerdown", (e) => {
    if (e.target.datum) {
      pressed = { mark: e.target, carded: carded === e.target, touch: e.pointerType === "touch" };
      return show(e.target);
    }
    pressed = null;
    chart.hide();
    if (e.pointerType === "touch") return; // a finger scrolls the page
    drag = { x: e.clientX, y: e.clientY, dx: view.dx, dy: view.dy };
    svg.setPointerCapture(e.pointerId);
  });
  svg.addEventListener("pointermove", (e) => {
    if (!drag) return;
    view = { k: view.k, dx: drag.dx + e.clientX - drag.x, dy: drag.dy + e.clientY - drag.y };
    chart.draw();
  });
  const release = () => {
    drag = null;
  };
  svg.addEventListener("pointerup", release);
  svg.addEventListener("pointercancel", release);
  const home = () => {
    view = { k: 1, dx: 0, dy: 0 };
    chart.draw();
  };
  svg.addEventListener("dblclick", home);
  const reset = el("button", { type: "button", title: data.labels.reset, class: "reset" }, data.labels.reset);
  reset.addEventListener("click", home);
  chart.tools.prepend(reset);
  return chart;
}

function layerLines(root, data) {
  const chart = frame(root, data, 260);
  const { svg, height } = chart;
  const pad = { left: 46, right: 10, top: 8, bottom: 34 };
  const layers = Math.max(...data.series.map((s) => s.values.length), 1) - 1;
  const [lo, hi] = data.y_range || extent(data.series.flatMap((s) => s.values), 0.06);
  // where each x stands: evenly spaced, or at data.x_at (a training set's sizes on a log scale)
  const at = data.x_at || Array.from({ length: layers + 1 }, (_, x) => x);
  const span = at[layers] - at[0];
  const sx = (x) => pad.left + (span ? (at[x] - at[0]) / span : 0.5) * (chart.width - pad.left - pad.right);
  const sy = (y) => pad.top + (1 - (y - lo) / (hi - lo)) * (height - pad.top - pad.bottom);
  const fmt = (v) => (data.percent ? `${(100 * v).toFixed(0)}%` : Math.abs(v) >= 1 ? v.toFixed(2) : v.toFixed(3));
  const tick = (v) => (data.percent ? `${Math.round(100 * v)}%` : String(v));
  const xName = (x) => (data.x_labels ? data.x_labels[x] : String(x)); // e.g. sizes that double

  chart.draw = () => {
    svg.setAttribute("width", chart.width);
    const right = chart.width - pad.right;
    const axes = el("svg:g", { class: "axes" });
    for (const v of ticks(lo, hi, 5)) {
      axes.append(el("svg:line", { x1: pad.left, x2: right, y1: sy(v), y2: sy(v), class: "grid" }));
      axes.append(el("svg:text", { x: pad.left - 6, y: sy(v) + 4, "text-anchor": "end" }, tick(v)));
    }
    const xTicks = data.x_at ? at.map((_, x) => x) : ticks(0, layers, Math.min(layers, 12)).filter(Number.isInteger);
    for (const v of xTicks) {
      axes.append(el("svg:text", { x: sx(v), y: height - pad.bottom + 16, "text-anchor": "middle" }, xName(v)));
    }
    axes.append(el("svg:text", { x: (pad.left + right) / 2, y: height - 4, "text-anchor": "middle" }, data.x_title));
    const side = el("svg:text", { x: 12, y: height / 2, "text-anchor": "middle", transform: `rotate(-90 12 ${height / 2})` });
    side.textContent = data.y_title;
    axes.append(side);
    // Solid lines, the dashed ones over them, then the dots (the solid series' last): a model's line that
    // runs along a reference (GloVe at chance) shows through the dashes, and its dots on top
    const shown = data.series.filter((s) => !chart.hidden.has(s.name));
    const layered = [...shown.filter((s) => !s.dashed), ...shown.filter((s) => s.dashed)];
    const lines = layered.map((s) => {
      const path = s.values.map((v, x) => `${x ? "L" : "M"}${sx(x).toFixed(1)},${sy(v).toFixed(1)}`).join("");
      const line = el("svg:path", { d: path, stroke: s.color, fill: "none", "stroke-width": 2 });
      if (s.dashed) line.setAttribute("stroke-dasharray", "6 4");
      return line;
    });
    const dots = [...layered].reverse().flatMap((s) =>
      s.values.map((v, x) => el("svg:circle", { cx: sx(x), cy: sy(v), r: 3.5, fill: s.color, class: "dot" })),
    );
    svg.replaceChildren(axes, ...lines, ...dots);
  };

  // Hover anywhere: a guide at the nearest layer, and every shown series' value there.
  const guide = el("svg:line", { class: "guide" });
  svg.addEventListener("pointermove", (e) => {
    const box = svg.getBoundingClientRect();
    const pointer = e.clientX - box.left;
    const x = at.reduce((best, _, i) => (Math.abs(sx(i) - pointer) < Math.abs(sx(best) - pointer) ? i : best), 0);
    const rows = data.series
      .filter((s) => !chart.hidden.has(s.name) && x < s.values.length)
      .sort((a, b) => b.values[x] - a.values[x])
      .map((s) => {
        const row = el("div", { class: "row" });
        row.append(swatch(s.color, "square"), `${s.name}: ${fmt(s.values[x])}`);
        return row;
      });
    if (!rows.length) return chart.hide();
    Object.entries({ x1: sx(x), x2: sx(x), y1: pad.top, y2: height - pad.bottom }).forEach(([k, v]) => guide.setAttribute(k, v));
    svg.append(guide);
    chart.show([el("div", { class: "head-row" }, data.x_labels ? `${xName(x)} · ${data.x_title}` : `${data.x_title} ${x}`), ...rows], sx(x), e.clientY - box.top);
  });
  svg.addEventListener("pointerleave", () => {
    guide.remove();
    chart.hide();
  });
  data.series.forEach((s) => chart.legendItem(s.name, swatch(s.color, s.dashed ? "dash" : "square")));
  return chart;
}

export default function (component) {
  const root = component.parentElement.querySelector(".light-chart");
  const data = JSON.parse(new TextDecoder().decode(component.data)); // JSON as bytes (light_charts.render)
  const chart = (data.kind === "lines" ? layerLines : senseMap)(root, data, component);
  chart.draw();
  root.dataset.drawn = data.kind;
  return chart.stop;
}
