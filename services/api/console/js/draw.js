// Drawing a zone on the floor with the mouse: a box (drag a rectangle), a cylinder or a sphere
// (press at the centre, drag out the radius), a polygon (click the vertices; a click on the last
// one again, a double-click or Enter closes it). The floor is the plane z = 0 of the site, and
// points snap to a 0.1 m grid on it. The result goes into the create form as GeometryType and
// GeometryData, for the user to check before Create; Esc cancels.

/** The grid drawn points snap to, in metres. */
export const SNAP = 0.1;

/** How far (CSS pixels) the pointer may move between press and release for a click. */
const CLICK_SLOP = 5;

/** Rounds `value` to the drawing grid, without float noise (0.30000000000000004) or -0. */
export function snap(value) {
  return Number((Math.round(value / SNAP) * SNAP).toFixed(1)) + 0;
}

const HINTS = {
  box: "Drag a rectangle on the floor. Esc cancels.",
  cylinder: "Press at the centre and drag out the radius. Esc cancels.",
  sphere: "Press at the centre and drag out the radius; the sphere rests on the floor. Esc cancels.",
  polygon: "Click the vertices; click the last one again or press Enter to close, Backspace removes the last one, Esc cancels.",
};

/**
 * The geometry of a shape drawn on the floor, as ZoneInput fields {GeometryType, GeometryData}:
 * `points` are the floor points `[x, y, z]` the tool took (box: two opposite corners; cylinder
 * and sphere: the centre and a point on the rim; polygon: the vertices), `height` the height in
 * metres of a box, cylinder or polygon (a sphere rests on the floor, so its radius is its only
 * size). Answers null while the points make no shape (no area, or fewer than 3 vertices).
 */
export function drawnGeometry(tool, points, height) {
  switch (tool) {
    case "box": {
      const [a, b] = points;
      const l = snap(Math.abs(b[0] - a[0]));
      const w = snap(Math.abs(b[1] - a[1]));
      if (!(l > 0 && w > 0)) return null;
      const corner = [Math.min(a[0], b[0]), Math.min(a[1], b[1]), a[2]];
      return { GeometryType: "cuboid", GeometryData: [corner, [l, w, height], [1, 0, 0], [0, 1, 0], [0, 0, 1]] };
    }
    case "cylinder":
    case "sphere": {
      const [c, rim] = points;
      const r = snap(Math.hypot(rim[0] - c[0], rim[1] - c[1]));
      if (!(r > 0)) return null;
      return tool === "cylinder"
        ? { GeometryType: "cylinder", GeometryData: [c, [0, 0, 1], [height, r, 0]] }
        : { GeometryType: "sphere", GeometryData: [[c[0], c[1], snap(c[2] + r)], [r, 0, 0]] };
    }
    case "polygon":
      if (points.length < 3) return null;
      return { GeometryType: "polygon", GeometryData: [...points, [height, 0, 0], [0, 0, 1]] };
    default:
      return null;
  }
}

/**
 * The drawing tools of the 3D view. `view` is the SiteView; `form` (the CreateForm) has
 * `fill(geometry)`, which answers the GeometryData text it wrote, and `text()`, the text it
 * holds now; `say(text, kind)` shows a hint or an error; `heightInput` is the height field and
 * `buttons` the tool buttons (`data-draw` names the tool).
 */
export class DrawTool {
  constructor(view, form, say, heightInput, buttons) {
    this.view = view;
    this.form = form;
    this.say = say;
    this.heightInput = heightInput;
    this.buttons = buttons;
    this.tool = null; // the tool in use: box, cylinder, sphere, polygon
    this.points = [];
    this.pressed = null; // {x, y} of the pointer press, in CSS pixels
    this.drawn = null; // the last finished shape: {tool, points, text (GeometryData as filled)}
    this.canvas = view.webgl ? view.renderer.domElement : null;
    for (const button of buttons) button.addEventListener("click", () => this.start(button.dataset.draw));
    heightInput.addEventListener("input", () => this.heightChanged());
    window.addEventListener("keydown", (e) => this.key(e));
    if (!this.canvas) return;
    this.canvas.addEventListener("pointerdown", (e) => this.down(e));
    this.canvas.addEventListener("pointermove", (e) => this.move(e));
    this.canvas.addEventListener("pointerup", (e) => this.up(e));
    this.canvas.addEventListener("dblclick", (e) => {
      if (this.tool === "polygon") {
        e.preventDefault();
        this.close();
      }
    });
  }

  /** Whether a tool holds the mouse (the view neither turns nor picks devices meanwhile). */
  get active() {
    return this.tool !== null;
  }

  height() {
    return Number(this.heightInput.value);
  }

  /** Takes up `tool`; the view stops turning with the mouse until the shape is done. */
  start(tool) {
    if (!this.canvas) {
      this.say("Drawing needs the 3D view, and this browser has no WebGL.", "error");
      return;
    }
    this.end();
    this.tool = tool;
    this.points = [];
    this.view.setNavigation(false);
    this.canvas.classList.add("drawing");
    for (const b of this.buttons) b.setAttribute("aria-pressed", String(b.dataset.draw === tool));
    // Enter and Esc are the drawing's, not a focused button's.
    document.activeElement?.blur();
    this.say(HINTS[tool], "");
  }

  /** Leaves the tool in use, if any. */
  end() {
    this.tool = null;
    this.points = [];
    this.pressed = null;
    if (!this.canvas) return;
    this.view.setNavigation(true);
    this.canvas.classList.remove("drawing");
    for (const b of this.buttons) b.setAttribute("aria-pressed", "false");
  }

  /** Cancels the drawing under way, or clears the outline of a drawn one. */
  cancel() {
    const drawing = this.active;
    this.end();
    this.clear();
    this.say(drawing ? "Drawing cancelled." : "", "");
  }

  /** Takes the preview away (after Create, or Esc). */
  clear() {
    this.drawn = null;
    this.view.setPreview(null);
  }

  floor(e) {
    const p = this.view.floorPoint(e.clientX, e.clientY);
    return p && [snap(p[0]), snap(p[1]), snap(p[2])];
  }

  down(e) {
    if (!this.tool || e.button !== 0) return;
    const p = this.floor(e);
    if (!p) return;
    e.preventDefault();
    this.canvas.setPointerCapture(e.pointerId);
    this.pressed = { x: e.clientX, y: e.clientY };
    if (this.tool !== "polygon") this.points = [p, p];
  }

  move(e) {
    if (!this.tool) return;
    const p = this.floor(e);
    if (!p) return;
    if (this.tool === "polygon") {
      if (this.points.length) this.view.setPreview(null, [...this.points, p]);
      return;
    }
    if (!this.pressed) return;
    this.points[1] = p;
    this.preview(drawnGeometry(this.tool, this.points, this.height()), this.points);
  }

  up(e) {
    if (!this.tool || !this.pressed) return;
    const pressed = this.pressed;
    this.pressed = null;
    const p = this.floor(e);
    if (this.tool === "polygon") {
      const click = Math.hypot(e.clientX - pressed.x, e.clientY - pressed.y) <= CLICK_SLOP;
      if (click && p) this.vertex(p);
      return;
    }
    if (p) this.points[1] = p;
    const geometry = drawnGeometry(this.tool, this.points, this.height());
    if (!geometry) {
      this.view.setPreview(null);
      this.say(`The ${this.tool} has no size: ${HINTS[this.tool]}`, "error");
      return;
    }
    this.finish(geometry);
  }

  /**
   * Adds a polygon vertex, or closes the polygon when the click lands on the last vertex again:
   * the second click of a double-click does, however slowly the two clicks arrive.
   */
  vertex(p) {
    const last = this.points[this.points.length - 1];
    if (last && last[0] === p[0] && last[1] === p[1]) {
      this.close();
      return;
    }
    this.points.push(p);
    this.view.setPreview(null, this.points);
    this.say(`${this.points.length} vertices. ${HINTS.polygon}`, "");
  }

  /** Closes the polygon being drawn. */
  close() {
    const geometry = drawnGeometry("polygon", this.points, this.height());
    if (!geometry) {
      this.say(`A polygon needs at least 3 vertices; it has ${this.points.length}. ${HINTS.polygon}`, "error");
      return;
    }
    this.finish(geometry);
  }

  key(e) {
    const typing = e.target instanceof HTMLElement && e.target.matches("input, textarea, select");
    if (e.key === "Escape" && (this.active || this.drawn) && !typing) {
      e.preventDefault();
      this.cancel();
    } else if (this.tool === "polygon" && !typing && e.key === "Enter") {
      e.preventDefault();
      this.close();
    } else if (this.tool === "polygon" && !typing && e.key === "Backspace" && this.points.length) {
      e.preventDefault();
      this.points.pop();
      this.view.setPreview(null, this.points);
      this.say(`${this.points.length} vertices. ${HINTS.polygon}`, "");
    }
  }

  /** The shape is done: it goes into the create form and stays outlined in the view. */
  finish(geometry) {
    const tool = this.tool;
    const points = this.points;
    this.end();
    this.drawn = { tool, points, text: this.form.fill(geometry) };
    this.preview(geometry);
    const height = tool === "sphere" ? "" : ` ${this.heightInput.value} m high`;
    this.say(`Drawn: a ${geometry.GeometryType}${height}. Check it, then Create (Esc clears).`, "ok");
  }

  /** A new height redraws the drawn shape, while the form still holds it as drawn. */
  heightChanged() {
    if (!this.drawn || this.drawn.tool === "sphere" || this.form.text() !== this.drawn.text) return;
    const geometry = drawnGeometry(this.drawn.tool, this.drawn.points, this.height());
    this.drawn.text = this.form.fill(geometry);
    this.preview(geometry);
    this.say(`Drawn: a ${geometry.GeometryType} ${this.heightInput.value} m high. Check it, then Create (Esc clears).`, "ok");
  }

  /** Outlines the create form's geometry as typed, after a shape was drawn into it. */
  formChanged(geometry) {
    if (!this.drawn || this.active) return;
    this.preview(geometry);
  }

  preview(geometry, outline = []) {
    // Half-typed or out-of-range data cannot be drawn: then only the outline shows.
    const drawable = geometry && Array.isArray(geometry.GeometryData) && geometry.GeometryData.flat().every(Number.isFinite);
    try {
      this.view.setPreview(drawable ? geometry : null, outline);
    } catch {
      this.view.setPreview(null, outline);
    }
  }
}
