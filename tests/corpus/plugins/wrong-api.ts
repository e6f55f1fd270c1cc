// Written for another major version of the plugin API.
export default { name: "Future", version: "1.0", api: "2.0", advise() {} };
