// An app's declarations in the shape `portico types --client` writes: they augment the
// module, and the client's calls take their types from them.
export {};
declare module 'portico-client' {
  interface Collections {
    tasks: { _id: string; title: string; done?: boolean; createdAt?: string; updatedAt?: string };
    people: { _id: string; name: string; address?: { city: string } };
  }
  interface Methods {
    addTask: unknown;
  }
  interface Publications {
    openTasks: unknown;
  }
  interface Routes {
    '/api/hello': 'GET' | 'POST';
  }
}
