// What draws WebGL on this machine: a graphics card or software (SwiftShader, llvmpipe), and the
// renderer's name, for the view's choices (no antialiasing, a lower resolution while the camera
// moves in software) and its counters.

/**
 * Whether WebGL runs on a graphics card. In software (SwiftShader, llvmpipe: machines without
 * one) antialiasing by multisampling costs more than everything the view draws.
 */
export function onGraphicsCard() {
  const gl = document.createElement("canvas").getContext("webgl2");
  if (!gl) return true;
  const name = rendererName(gl);
  gl.getExtension("WEBGL_lose_context")?.loseContext();
  return !/swiftshader|llvmpipe|software/i.test(name);
}

/** What draws the WebGL context `gl`: the graphics card's or software renderer's name. */
export function rendererName(gl) {
  const info = gl.getExtension("WEBGL_debug_renderer_info");
  return String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER));
}
