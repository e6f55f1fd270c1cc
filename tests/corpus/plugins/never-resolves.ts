// advise returns a promise that never settles.
export default { name: "Never", version: "1.0", advise: () => new Promise(() => {}) };
