// zarrita's storage package also holds a Node file-system store, whose
// imports of node:fs, node:path and node:buffer a browser cannot resolve; the
// page never uses it, so they resolve to this empty module.
export const Buffer = undefined;
