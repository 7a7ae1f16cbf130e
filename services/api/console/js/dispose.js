// Letting go of three.js objects: the GPU buffers, materials and textures an object and its
// children hold (the floor grid when it is built again, the preview of a shape being drawn).

/** Frees the geometries, materials and textures of `object` and everything under it. */
export function dispose(object) {
  object.traverse((o) => {
    o.geometry?.dispose();
    if (o.material) {
      o.material.map?.dispose();
      o.material.dispose();
    }
  });
}
