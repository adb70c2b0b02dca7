// Plain data, so the dashboard's client components can import it without the server's modules.
export const REACTION_TYPES = ["love", "like", "dislike", "laugh", "emphasize", "question"] as const;
