"use client";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { createTRPCClient } from "@trpc/client";
import { type ReactNode, useState } from "react";
import { TRPCProvider } from "@/lib/trpc";
import { dashboardLink } from "@/lib/trpc-link";
import type { AppRouter } from "@/server/transports/trpc/router";

export function Providers({ children }: { children: ReactNode }) {
  const [queryClient] = useState(() => new QueryClient({ defaultOptions: { queries: { staleTime: 2_000, retry: 1 } } }));
  const [trpcClient] = useState(() => createTRPCClient<AppRouter>({ links: [dashboardLink()] }));
  return (
    <QueryClientProvider client={queryClient}>
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        {children}
      </TRPCProvider>
    </QueryClientProvider>
  );
}
